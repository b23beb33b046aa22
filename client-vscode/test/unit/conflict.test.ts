import { URI } from 'vscode-uri';
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { CANCEL, confirmOverwrite, OVERWRITE, PUT_BACK_MINE, restore, syncEditors } from '../../src/features/restore';
import { conflictError, fakeServer, makeCtx, restoreResult, WS } from './helpers';

beforeEach(() => api.resetVscodeApi());

function conflictOnce(kind: 'undo' | 'redo', files = ['src/app.py']) {
    let calls = 0;
    return fakeServer({
        [`snapshot/${kind}`]: (params) => {
            calls += 1;
            if (calls === 1 && !params.force) {
                throw conflictError(files);
            }
            return restoreResult(kind, 1);
        },
    });
}

describe('the conflict flow (-32803, reason "conflict")', () => {
    it('shows a modal naming the files; "Overwrite my changes" retries with force', async () => {
        const server = conflictOnce('undo', ['src/app.py', 'README.md']);
        api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, overwrite: unknown) => overwrite);
        const result = await restore(makeCtx(server), 'undo', { workspace: WS, count: 1 });

        const [message, options, ...items] = api.showWarningMessage.mock.calls[0];
        expect(message).toBe('Undo would overwrite your changes to 2 files.');
        expect(options.modal).toBe(true);
        expect(options.detail).toContain('src/app.py');
        expect(options.detail).toContain('README.md');
        expect(items.map((i: { title: string }) => i.title)).toEqual([OVERWRITE, CANCEL]);
        expect(items[1].isCloseAffordance).toBe(true);

        expect(server.calls('snapshot/undo')).toEqual([
            { workspace: WS, count: 1 },
            { workspace: WS, count: 1, force: true },
        ]);
        expect(result?.turnsUndone).toBe(1);
        expect(api.showInformationMessage).toHaveBeenCalledWith('Undid 1 turn (1 file changed)', 'Redo');
    });

    // Proves the summary of a forced undo offers the edits it overwrote back: the server kept
    // them as a rescued version, and "Put Back My Changes" puts back exactly that one.
    it('a forced undo offers to put the overwritten edits back', async () => {
        const kept = { id: '8c61d0a4f3b2e917', createdAt: '2026-11-28T20:00:00.000Z', reason: 'forcedUndo', files: ['src/app.py'] };
        let calls = 0;
        const server = fakeServer({
            'snapshot/undo': (params) => {
                calls += 1;
                if (calls === 1 && !params.force) {
                    throw conflictError(['src/app.py']);
                }
                return restoreResult('undo', 1, { rescued: kept, turns: [{ session: 'claude-code:c1' }] });
            },
        });
        api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, overwrite: unknown) => overwrite);
        api.showInformationMessage.mockImplementationOnce(async () => PUT_BACK_MINE);
        await restore(makeCtx(server), 'undo', { workspace: WS, count: 1 });
        expect(api.showInformationMessage).toHaveBeenCalledWith('Undid 1 turn (1 file changed)', 'Redo', PUT_BACK_MINE);
        await vi.waitFor(() =>
            expect(api.executeCommand).toHaveBeenCalledWith('turnback.rescueVersion', { workspace: WS, session: 'claude-code:c1', id: kept.id }),
        );
    });

    // Proves the summary reads as sentences (the server's message ends without a period)
    // and shows the agent's hint: Claude Code's /rewind was only in a field no one showed.
    it('the summary joins its notes as sentences and shows the agent hint', async () => {
        const hint = { harness: 'claude-code', prompt: 'Fix it', message: 'In Claude Code, run /rewind to roll the conversation back.' };
        const server = fakeServer({
            'snapshot/undo': () => restoreResult('undo', 1, { kept: [{ path: 'big.bin', reason: 'tooLarge' }], agentHint: hint }),
        });
        await restore(makeCtx(server), 'undo', { workspace: WS, count: 1 });
        expect(api.showInformationMessage.mock.calls[0][0]).toBe(
            `Undid 1 turn (1 file changed). Left alone: big.bin (tooLarge). ${hint.message}`,
        );
    });

    // Proves a file another session changed meanwhile is named with that session (`by`),
    // so the user knows whose undo takes it back.
    it('a file kept for another session names the session', async () => {
        const server = fakeServer({
            'snapshot/undo': () =>
                restoreResult('undo', 1, { kept: [{ path: 'b.txt', reason: 'otherSession', by: 'codex:Y' }] }),
        });
        await restore(makeCtx(server), 'undo', { workspace: WS, count: 1 });
        expect(api.showInformationMessage.mock.calls[0][0]).toBe('Undid 1 turn (1 file changed). Left alone: b.txt (otherSession: codex:Y).');
    });

    it('"Cancel" sends no retry and changes nothing', async () => {
        const server = conflictOnce('undo');
        api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, _ok: unknown, cancel: unknown) => cancel);
        const ctx = makeCtx(server);
        const result = await restore(ctx, 'undo', { workspace: WS, count: 1 });
        expect(result).toBeUndefined();
        expect(server.calls('snapshot/undo')).toHaveLength(1);
        expect(api.showInformationMessage).not.toHaveBeenCalled();
        expect(ctx.refresh).not.toHaveBeenCalled();
    });

    it('closing the modal (escape) counts as cancel', async () => {
        const server = conflictOnce('undo');
        const result = await restore(makeCtx(server), 'undo', { workspace: WS });
        expect(result).toBeUndefined();
        expect(server.calls('snapshot/undo')).toHaveLength(1);
    });

    it('works the same for redo', async () => {
        const server = conflictOnce('redo');
        api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, overwrite: unknown) => overwrite);
        await restore(makeCtx(server), 'redo', { workspace: WS, count: 2, session: 's' });
        expect(api.showWarningMessage.mock.calls[0][0]).toBe('Redo would overwrite your changes to 1 file.');
        expect(server.calls('snapshot/redo')[1]).toEqual({ workspace: WS, count: 2, session: 's', force: true });
    });

    it('other errors are not conflicts: no modal, the error propagates', async () => {
        const server = fakeServer({
            'snapshot/undo': () => {
                throw { code: -32803, message: 'busy', data: { reason: 'busy' } };
            },
        });
        await expect(restore(makeCtx(server), 'undo', {})).rejects.toMatchObject({ data: { reason: 'busy' } });
        expect(api.showWarningMessage).not.toHaveBeenCalled();
    });

    it('confirmOverwrite lists at most 20 files', async () => {
        const files = Array.from({ length: 25 }, (_, i) => `f${i}.txt`);
        await confirmOverwrite('undo', files);
        const detail: string = api.showWarningMessage.mock.calls[0][1].detail;
        expect(detail).toContain('f19.txt');
        expect(detail).not.toContain('f20.txt');
        expect(detail).toContain('and 5 more');
    });
});

describe('editors after a restore', () => {
    function doc(file: string, text: () => string, dirty = false) {
        return { uri: URI.file(file), isDirty: dirty, isClosed: false, getText: text };
    }

    it('leaves documents with unsaved changes alone and reports them', async () => {
        api.state.documents = [doc('/ws/src/app.py', () => 'my unsaved text', true)];
        const unsaved = await syncEditors('/ws', restoreResult('undo', 1) as never, 0);
        expect(unsaved).toHaveLength(1);
        expect(api.executeCommand).not.toHaveBeenCalled();
    });

    it('reverts the active editor if the file watcher has not reloaded it', async () => {
        const fs = await import('fs');
        const os = await import('os');
        const path = await import('path');
        const root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-unit-'));
        fs.mkdirSync(path.join(root, 'src'));
        fs.writeFileSync(path.join(root, 'src', 'app.py'), 'restored\n');
        const stale = doc(path.join(root, 'src', 'app.py'), () => 'old text\n');
        const other = doc(path.join(root, 'other.py'), () => 'x');
        api.state.documents = [stale, other];
        api.state.activeEditor = { document: stale };
        await syncEditors(root, restoreResult('undo', 1) as never, 0);
        expect(api.executeCommand).toHaveBeenCalledWith('workbench.action.files.revert');
        fs.rmSync(root, { recursive: true, force: true });
    });

    it('does not revert a stale document that is not the active editor', async () => {
        api.state.documents = [doc('/nonexistent/src/app.py', () => 'old')];
        await syncEditors('/nonexistent', restoreResult('undo', 1) as never, 0);
        expect(api.executeCommand).not.toHaveBeenCalled();
    });

    it('the summary says when unsaved editors keep the user text', async () => {
        api.state.documents = [doc('/ws/src/app.py', () => 'mine', true)];
        const server = fakeServer({ 'snapshot/undo': () => restoreResult('undo', 1) });
        await restore(makeCtx(server), 'undo', {});
        expect(api.showInformationMessage.mock.calls[0][0]).toContain('1 editor with unsaved changes still shows your text');
    });
});
