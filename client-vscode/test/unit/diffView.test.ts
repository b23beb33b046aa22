import { beforeEach, describe, expect, it, vi } from 'vitest';
import { URI } from 'vscode-uri';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { TurnbackApi } from '../../src/features/api';
import { contentUri, parseContentUri, showTurnDiff, TurnContentProvider } from '../../src/features/diffView';
import { fakeServer, listOf, makeCtx, turn, WS } from './helpers';

beforeEach(() => api.resetVscodeApi());

const fileDiff = (path: string, status: string, oldPath: string | null = null) => ({
    path,
    oldPath,
    status,
    binary: false,
    additions: 1,
    deletions: 0,
    hunks: [],
    diff: '',
});

describe('turnback: documents', () => {
    it('a content URI names workspace, session, turn, path and side, and reads back', () => {
        const uri = contentUri({ workspace: WS, session: 's 1', turn: 'abc', path: 'src/a b.py', side: 'before' });
        expect(uri.scheme).toBe('turnback');
        expect(uri.path).toBe('/src/a b.py');
        expect(parseContentUri(URI.parse(uri.toString()))).toEqual({ workspace: WS, session: 's 1', turn: 'abc', path: 'src/a b.py', side: 'before' });
    });

    it('a file name that is not UTF-8 (lone surrogates) makes a URI that renders and keeps the exact path', () => {
        const name = 'caf\udce9/bad\udcff.txt 🙂';
        const uri = contentUri({ turn: 'abc', path: name, side: 'after' });
        expect(uri.path).toBe('/caf\ufffd/bad\ufffd.txt 🙂');
        expect(parseContentUri(URI.parse(uri.toString())).path).toBe(name);
    });

    it('the provider serves snapshot/fileContent text, and placeholders for binary and large files', async () => {
        const server = fakeServer({
            'snapshot/fileContent': (p) => {
                if (p.path === 'bin.dat') return { path: p.path, side: p.side, turn: 't', exists: true, binary: true, text: '' };
                if (p.path === 'huge.log') return { path: p.path, side: p.side, turn: 't', exists: true, binary: false, text: '', tooLarge: true, size: 3e6 };
                if (p.path === 'gone.py') return { path: p.path, side: p.side, turn: 't', exists: false, binary: false, text: '' };
                return { path: p.path, side: p.side, turn: 't', exists: true, binary: false, text: `${p.side} of ${p.path}` };
            },
        });
        const provider = new TurnContentProvider(new TurnbackApi(() => ({ sendRequest: server.sendRequest as any })));
        const ask = (path: string, side: 'before' | 'after') =>
            provider.provideTextDocumentContent(contentUri({ workspace: WS, session: 'default', turn: 3, path, side }) as any);
        expect(await ask('src/app.py', 'before')).toBe('before of src/app.py');
        expect(server.calls('snapshot/fileContent')[0]).toEqual({ workspace: WS, session: 'default', turn: 3, path: 'src/app.py', side: 'before' });
        expect(await ask('bin.dat', 'after')).toContain('binary');
        expect(await ask('huge.log', 'after')).toContain('3000000 bytes');
        expect(await ask('gone.py', 'after')).toBe('');

        const changed = vi.fn();
        provider.onDidChange(changed);
        const open = contentUri({ workspace: WS, session: 'default', turn: 3, path: 'src/app.py', side: 'before' });
        api.state.documents = [{ uri: open, isDirty: false, isClosed: false, getText: () => '' }];
        provider.refresh();
        expect(changed).toHaveBeenCalledTimes(1);
        expect(changed.mock.calls[0][0].toString()).toBe(open.toString());
        api.state.documents = [];
        provider.refresh(); // closed: forgotten
        provider.refresh();
        expect(changed).toHaveBeenCalledTimes(1);
    });

    it('a failed request shows in the document instead of failing the editor', async () => {
        const server = fakeServer({
            'snapshot/fileContent': () => {
                throw { code: -32602, message: 'unknown turn 9', data: { field: 'turn' } };
            },
        });
        const provider = new TurnContentProvider(new TurnbackApi(() => ({ sendRequest: server.sendRequest as any })));
        const text = await provider.provideTextDocumentContent(contentUri({ turn: 9, path: 'a.py', side: 'after' }) as any);
        expect(text).toContain('unknown turn 9');
    });
});

describe('turnback: Show Turn Diff', () => {
    it('one file: vscode.diff with the before and after sides', async () => {
        const t = turn(2, { label: 'Fix' });
        const server = fakeServer({ 'snapshot/diff': () => ({ turn: t, files: [fileDiff('src/app.py', 'modified')] }) });
        await showTurnDiff(makeCtx(server), { turn: 2 });
        const [command, before, after, title] = api.executeCommand.mock.calls[0];
        expect(command).toBe('vscode.diff');
        expect(parseContentUri(before)).toMatchObject({ turn: t.id, path: 'src/app.py', side: 'before', session: 'default' });
        expect(parseContentUri(after)).toMatchObject({ turn: t.id, path: 'src/app.py', side: 'after' });
        expect(title).toBe('src/app.py (turn 2: Fix)');
    });

    it('several files: vscode.changes; a rename reads its before side under the old path', async () => {
        const t = turn(1);
        const server = fakeServer({
            'snapshot/diff': () => ({ turn: t, files: [fileDiff('a.py', 'added'), fileDiff('lib/new.py', 'renamed', 'lib/old.py')] }),
        });
        await showTurnDiff(makeCtx(server, '/repo'), { turn: t.id });
        const [command, title, resources] = api.executeCommand.mock.calls[0];
        expect(command).toBe('vscode.changes');
        expect(title).toBe('Agent turn 1: Turn 1');
        expect(resources).toHaveLength(2);
        const [label, before, after] = resources[1];
        expect(label.fsPath).toBe(URI.file('/repo/lib/new.py').fsPath);
        expect(parseContentUri(before).path).toBe('lib/old.py');
        expect(parseContentUri(after).path).toBe('lib/new.py');
    });

    it('an added file has no before side and a deleted one no after side (shown as added/deleted)', async () => {
        const t = turn(1);
        const server = fakeServer({
            'snapshot/diff': () => ({ turn: t, files: [fileDiff('new.py', 'added'), fileDiff('old.py', 'deleted')] }),
        });
        await showTurnDiff(makeCtx(server, '/repo'), { turn: t.id });
        const [, , resources] = api.executeCommand.mock.calls[0];
        const [[, addedBefore, addedAfter], [, deletedBefore, deletedAfter]] = resources;
        expect(addedBefore).toBeUndefined();
        expect(parseContentUri(addedAfter).path).toBe('new.py');
        expect(parseContentUri(deletedBefore).path).toBe('old.py');
        expect(deletedAfter).toBeUndefined();
    });

    it('without a turn: the newest active turn of the listed session', async () => {
        const server = fakeServer({
            'snapshot/list': () => listOf([turn(1), turn(2), turn(3, { state: 'undone' })]),
            'snapshot/diff': (p) => ({ turn: turn(2), files: [fileDiff('x', 'modified')], p }),
        });
        await showTurnDiff(makeCtx(server));
        expect(server.calls('snapshot/diff')).toEqual([{ workspace: WS, session: 'default', turn: turn(2).id, context: 0 }]);
    });

    it('a turn that changed nothing says so', async () => {
        const server = fakeServer({ 'snapshot/diff': () => ({ turn: turn(1), files: [] }) });
        await showTurnDiff(makeCtx(server), { turn: 1 });
        expect(api.executeCommand).not.toHaveBeenCalled();
        expect(api.showInformationMessage.mock.calls[0][0]).toContain('changed no files');
    });
});
