import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { createMiddleware, executeServerCommand, filterConfiguration } from '../../src/features/middleware';
import { conflictError, fakeServer, makeCtx, restoreResult, turn } from './helpers';

beforeEach(() => api.resetVscodeApi());

const LENS_TARGET = { workspace: 'file:///repo', session: 'default' };

describe('code lens commands (executeCommand middleware)', () => {
    it('turnback.undo from a lens takes the extension path: conflict modal, then force', async () => {
        let first = true;
        const server = fakeServer({
            'snapshot/undo': (p) => {
                if (first) {
                    first = false;
                    throw conflictError(['a.py']);
                }
                return restoreResult('undo', 1, { p });
            },
        });
        api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, overwrite: unknown) => overwrite);
        const next = vi.fn();
        await executeServerCommand(makeCtx(server), 'turnback.undo', [LENS_TARGET], next);
        expect(next).not.toHaveBeenCalled();
        expect(server.calls('snapshot/undo')).toEqual([
            { ...LENS_TARGET, count: 1 },
            { ...LENS_TARGET, count: 1, force: true },
        ]);
    });

    // Proves the "Undo turn" lens undoes the turn it names: only a count was sent, so a
    // lens clicked after a newer turn was captured undid that newer turn instead.
    it('turnback.undo from a lens sends the turn it names', async () => {
        const server = fakeServer({ 'snapshot/undo': () => restoreResult('undo', 1) });
        const next = vi.fn();
        await executeServerCommand(makeCtx(server), 'turnback.undo', [{ ...LENS_TARGET, turn: '1d2170045874751e' }], next);
        expect(server.calls('snapshot/undo')).toEqual([{ ...LENS_TARGET, turn: '1d2170045874751e' }]);
    });

    it('turnback.redo goes through snapshot/redo', async () => {
        const server = fakeServer({ 'snapshot/redo': () => restoreResult('redo', 1) });
        const next = vi.fn();
        await executeServerCommand(makeCtx(server), 'turnback.redo', [LENS_TARGET], next);
        expect(server.calls('snapshot/redo')).toEqual([{ ...LENS_TARGET, count: 1 }]);
        expect(next).not.toHaveBeenCalled();
    });

    it('turnback.showDiff opens the diff editor instead of returning data', async () => {
        const t = turn(3, { id: '1d2170045874751e' });
        const server = fakeServer({
            'snapshot/diff': () => ({
                turn: t,
                files: [{ path: 'src/app.py', oldPath: null, status: 'modified', binary: false, additions: 1, deletions: 1, hunks: [], diff: '' }],
            }),
        });
        const next = vi.fn();
        await executeServerCommand(makeCtx(server), 'turnback.showDiff', [{ ...LENS_TARGET, turn: t.id, path: 'src/app.py' }], next);
        expect(next).not.toHaveBeenCalled();
        expect(server.calls('snapshot/diff')).toEqual([{ ...LENS_TARGET, turn: t.id, path: 'src/app.py', context: 0 }]);
        expect(api.executeCommand.mock.calls[0][0]).toBe('vscode.diff');
    });

    it('turnback.revertHunk goes to the server and warns when nothing was applied', async () => {
        const next = vi.fn(async () => ({ applied: false, message: 'That hunk is no longer in the document' }));
        const args = [{ uri: 'file:///repo/a.py', turn: 'x', oldStart: 1, oldLines: 1, newStart: 1, newLines: 1 }];
        const result = await executeServerCommand(makeCtx(fakeServer()), 'turnback.revertHunk', args, next);
        expect(next).toHaveBeenCalledWith('turnback.revertHunk', args);
        expect(result).toEqual({ applied: false, message: 'That hunk is no longer in the document' });
        expect(api.showWarningMessage).toHaveBeenCalledWith('turnback: That hunk is no longer in the document', {});
    });

    it('turnback.capture goes to the server and refreshes', async () => {
        const next = vi.fn(async () => turn(5));
        const ctx = makeCtx(fakeServer());
        await executeServerCommand(ctx, 'turnback.capture', [{}], next);
        expect(next).toHaveBeenCalled();
        expect(ctx.refresh).toHaveBeenCalled();
    });

    it('errors are shown, not thrown into VS Code', async () => {
        const next = vi.fn(async () => {
            throw { code: -32602, message: 'turn: unknown turn', data: { field: 'turn' } };
        });
        await expect(executeServerCommand(makeCtx(fakeServer()), 'turnback.somethingElse', [], next)).resolves.toBeUndefined();
        expect(api.showErrorMessage).toHaveBeenCalledWith('turnback: turn: unknown turn', 'Show Output');
    });

    it('createMiddleware wires executeCommand', async () => {
        const middleware = createMiddleware(makeCtx(fakeServer()));
        const next = vi.fn(async () => 42);
        await expect((middleware.executeCommand as any)('other', [1], next)).resolves.toBe(42);
    });
});

describe('workspace/configuration answers', () => {
    it('carry only the server settings for section "turnback"', async () => {
        const section = {
            untrackedFileSizeLimit: 5,
            codeLens: false,
            excludedDirectories: ['x'],
            server: { path: '', python: '', args: [] },
            trace: { server: 'off' },
        };
        const params = { items: [{ section: 'turnback' }, { section: 'editor' }] };
        expect(filterConfiguration(params, [section, { tabSize: 4 }])).toEqual([
            { untrackedFileSizeLimit: 5, codeLens: false, excludedDirectories: ['x'] },
            { tabSize: 4 },
        ]);
        const middleware = createMiddleware(makeCtx(fakeServer()));
        const answer = await (middleware.workspace!.configuration as any)(params, {}, () => [section, null]);
        expect(answer[0]).not.toHaveProperty('server');
    });
});
