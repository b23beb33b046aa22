import { beforeEach, describe, expect, it, vi } from 'vitest';
import { URI } from 'vscode-uri';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { diffNode, redoToHere, TurnNode, TurnsNode, TurnsTreeProvider, undoToHere } from '../../src/features/treeView';
import { Commands } from '../../src/common/constants';
import { fakeServer, listOf, makeCtx, restoreResult, turn, WS } from './helpers';

beforeEach(() => api.resetVscodeApi());

function timelineServer() {
    return fakeServer({
        'snapshot/list': (p) => {
            if (p.session === 'other') {
                return listOf([turn(1, { session: 'other', files: [] })], { session: 'other' });
            }
            return listOf(
                [
                    turn(1, { label: 'Add tests', files: [{ path: 'tests/test_app.py', oldPath: null, status: 'added' }] }),
                    turn(2, {
                        state: 'undone',
                        files: [
                            { path: 'src/app.py', oldPath: null, status: 'modified' },
                            { path: 'lib/new.py', oldPath: 'lib/old.py', status: 'renamed' },
                        ],
                    }),
                ],
                {
                    sessions: [
                        { id: 'default', turns: 2, updatedAt: new Date().toISOString() },
                        { id: 'other', turns: 1, updatedAt: new Date().toISOString() },
                    ],
                },
            );
        },
        'snapshot/undo': () => restoreResult('undo', 1),
        'snapshot/redo': () => restoreResult('redo', 1),
    });
}

describe('Agent Turns view', () => {
    it('roots are the sessions of the single folder, the current one expanded', async () => {
        const server = timelineServer();
        const tree = new TurnsTreeProvider(makeCtx(server));
        const roots = await tree.getChildren();
        expect(roots.map((n) => n.kind)).toEqual(['session', 'session']);
        expect(server.calls('snapshot/list')[0]).toEqual({ workspace: WS, limit: 1 });
        const [current, other] = roots.map((n) => tree.getTreeItem(n));
        expect(current.label).toBe('default');
        expect(current.collapsibleState).toBe(2);
        expect(current.description).toContain('2 turns');
        expect(current.description).toContain('current');
        expect(other.collapsibleState).toBe(1);
    });

    it('a session lists its turns with includeFiles; a turn lists its files', async () => {
        const server = timelineServer();
        const tree = new TurnsTreeProvider(makeCtx(server));
        const [session] = await tree.getChildren();
        const turns = await tree.getChildren(session);
        expect(server.calls('snapshot/list')[1]).toEqual({ workspace: WS, session: 'default', includeFiles: true });
        expect(turns.map((n) => (n as TurnNode).turn.turn)).toEqual([2, 1]);

        const undone = tree.getTreeItem(turns[0]);
        expect(undone.contextValue).toBe('turn.undone');
        expect(undone.description).toContain('2 files');
        expect(undone.description).toContain('undone');
        const active = tree.getTreeItem(turns[1]);
        expect(active.label).toBe('Add tests');
        expect(active.contextValue).toBe('turn.active');

        const files = await tree.getChildren(turns[0]);
        const items = files.map((n) => tree.getTreeItem(n));
        expect(items.map((i) => i.label)).toEqual(['app.py', 'new.py']);
        expect(items[0].description).toBe('src · M');
        expect(items[1].description).toBe('lib · R · ← lib/old.py');
        expect(items[0].resourceUri?.fsPath).toBe(URI.file('/ws/src/app.py').fsPath);
        expect(items[0].command?.command).toBe(Commands.diffFile);
        expect(items[0].contextValue).toBe('file');
    });

    it('with several folders the roots are the folders', async () => {
        api.state.folders.push({ uri: URI.file('/ws2'), name: 'ws2', index: 1 });
        const tree = new TurnsTreeProvider(makeCtx(timelineServer()));
        const roots = await tree.getChildren();
        expect(roots.map((n) => n.kind)).toEqual(['folder', 'folder']);
        const sessions = await tree.getChildren(roots[1]);
        expect((sessions[0] as any).target.workspace).toBe(URI.file('/ws2').toString());
    });

    it('is empty while no server runs (the welcome view explains)', async () => {
        const tree = new TurnsTreeProvider(makeCtx(undefined));
        expect(await tree.getChildren()).toEqual([]);
    });

    it('shows a failed request as a message row', async () => {
        const server = fakeServer({
            'snapshot/list': () => {
                throw { code: -32803, message: 'No workspace folder is open', data: { reason: 'noWorkspace' } };
            },
        });
        const tree = new TurnsTreeProvider(makeCtx(server));
        const roots = await tree.getChildren();
        expect(roots).toEqual([{ kind: 'info', message: 'turnback: No workspace folder is open' }]);
    });

    it('refresh fires onDidChangeTreeData', () => {
        const tree = new TurnsTreeProvider(makeCtx(timelineServer()));
        const listener = vi.fn();
        tree.onDidChangeTreeData(listener);
        tree.refresh();
        expect(listener).toHaveBeenCalledWith(undefined);
    });

    it('inline actions: undo to here, redo to here, diff', async () => {
        const server = timelineServer();
        const ctx = makeCtx(server);
        const tree = new TurnsTreeProvider(ctx);
        const [session] = await tree.getChildren();
        const turns = (await tree.getChildren(session)) as TurnsNode[];
        await undoToHere(ctx, turns[1]); // turn 1, the only active one
        expect(server.calls('snapshot/undo')).toEqual([{ workspace: WS, session: 'default', turn: 'aaaaaaaaaaaaaaa1' }]);
        await redoToHere(ctx, turns[0]); // turn 2, undone
        expect(server.calls('snapshot/redo')).toEqual([{ workspace: WS, session: 'default', turn: 'aaaaaaaaaaaaaaa2' }]);
        await undoToHere(ctx, turns[0]); // undone: nothing to undo to
        expect(server.calls('snapshot/undo')).toHaveLength(1);

        server.handlers['snapshot/diff'] = () => ({ turn: turn(2), files: [] });
        const [file] = await tree.getChildren(turns[0]);
        await diffNode(ctx, file);
        expect(server.calls('snapshot/diff')[0]).toMatchObject({ session: 'default', path: 'src/app.py' });
    });
});
