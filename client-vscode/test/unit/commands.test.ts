import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { Commands } from '../../src/common/constants';
import {
    captureSnapshot,
    redoTurn,
    registerCommands,
    restoreParams,
    sealTurn,
    undoTurn,
    undoTurns,
    validateCount,
} from '../../src/features/commands';
import { fakeServer, listOf, makeCtx, restoreResult, turn, WS } from './helpers';

beforeEach(() => api.resetVscodeApi());

describe('undo and redo commands', () => {
    it('Undo Agent Turn sends snapshot/undo for one turn of the current workspace', async () => {
        const server = fakeServer({ 'snapshot/undo': () => restoreResult('undo', 1) });
        const ctx = makeCtx(server);
        const result = await undoTurn(ctx);
        expect(server.sendRequest).toHaveBeenCalledTimes(1);
        expect(server.sendRequest).toHaveBeenCalledWith('snapshot/undo', { workspace: WS, count: 1 });
        expect(result?.turnsUndone).toBe(1);
        expect(api.showInformationMessage).toHaveBeenCalledWith('Undid 1 turn (1 file changed)', 'Redo');
        expect(ctx.refresh).toHaveBeenCalled();
    });

    it('Redo Agent Turn sends snapshot/redo', async () => {
        const server = fakeServer({ 'snapshot/redo': () => restoreResult('redo', 1) });
        await redoTurn(makeCtx(server));
        expect(server.sendRequest).toHaveBeenCalledWith('snapshot/redo', { workspace: WS, count: 1 });
        expect(api.showInformationMessage).toHaveBeenCalledWith('Redid 1 turn (1 file changed)', 'Undo');
    });

    it('passes count, session and workspace given as the command argument', async () => {
        const server = fakeServer({ 'snapshot/undo': () => restoreResult('undo', 2) });
        await undoTurn(makeCtx(server), { count: 2, session: 'agent-1', workspace: 'file:///other' });
        expect(server.calls('snapshot/undo')).toEqual([{ workspace: 'file:///other', session: 'agent-1', count: 2 }]);
    });

    it('says "Nothing to undo" without a Redo button', async () => {
        const server = fakeServer({ 'snapshot/undo': () => ({ ...restoreResult('undo', 0), files: [] }) });
        await undoTurn(makeCtx(server));
        expect(api.showInformationMessage).toHaveBeenCalledWith('Nothing to undo');
    });

    it('names the files the restore left alone', async () => {
        const server = fakeServer({
            'snapshot/undo': () => restoreResult('undo', 1, { kept: [{ path: 'big.bin', reason: 'tooLarge' }] }),
        });
        await undoTurn(makeCtx(server));
        expect(api.showInformationMessage.mock.calls[0][0]).toContain('big.bin (tooLarge)');
    });

    it('restoreParams ignores a bad count', () => {
        const ctx = makeCtx(fakeServer());
        expect(restoreParams(ctx, { count: 0 })).toEqual({ workspace: WS, count: 1 });
        expect(restoreParams(ctx, 'nonsense')).toEqual({ workspace: WS, count: 1 });
        expect(restoreParams(ctx, { count: 3, force: true })).toEqual({ workspace: WS, count: 3, force: true });
    });
});

describe('Undo Several Turns…', () => {
    it('asks for a count and undoes that many turns of the listed session', async () => {
        const server = fakeServer({
            'snapshot/list': () => listOf([turn(1), turn(2), turn(3)], { session: 'default' }),
            'snapshot/undo': () => restoreResult('undo', 3),
        });
        api.showInputBox.mockResolvedValueOnce('3');
        await undoTurns(makeCtx(server));
        const options = api.showInputBox.mock.calls[0][0];
        expect(options.prompt).toContain('3 active turns');
        expect(options.validateInput('4')).toContain('only 3');
        expect(options.validateInput('x')).toBeDefined();
        expect(options.validateInput('2')).toBeUndefined();
        expect(server.calls('snapshot/undo')).toEqual([{ workspace: WS, session: 'default', count: 3 }]);
    });

    it('does nothing when the input box is dismissed', async () => {
        const server = fakeServer({ 'snapshot/list': () => listOf([turn(1)]) });
        await undoTurns(makeCtx(server));
        expect(server.calls('snapshot/undo')).toEqual([]);
    });

    it('says there is nothing to undo without asking', async () => {
        const server = fakeServer({ 'snapshot/list': () => listOf([turn(1, { state: 'undone' })]) });
        await undoTurns(makeCtx(server));
        expect(api.showInputBox).not.toHaveBeenCalled();
        expect(api.showInformationMessage).toHaveBeenCalledWith('turnback: Nothing to undo');
    });

    it('validateCount accepts whole numbers from 1 up to the max', () => {
        expect(validateCount('1')).toBeUndefined();
        expect(validateCount(' 12 ')).toBeUndefined();
        expect(validateCount('0')).toBeDefined();
        expect(validateCount('-1')).toBeDefined();
        expect(validateCount('1.5')).toBeDefined();
        expect(validateCount('5', 4)).toBeDefined();
    });
});

describe('capture commands', () => {
    it('Capture Snapshot asks for a label and sends snapshot/capture', async () => {
        const server = fakeServer({ 'snapshot/capture': (p) => turn(4, { label: p.label }) });
        api.showInputBox.mockResolvedValueOnce('Fix the parser');
        const ctx = makeCtx(server);
        await captureSnapshot(ctx);
        expect(server.calls('snapshot/capture')).toEqual([{ workspace: WS, label: 'Fix the parser' }]);
        expect(api.showInformationMessage).toHaveBeenCalledWith('turnback: captured turn 4 (Fix the parser).');
        expect(ctx.refresh).toHaveBeenCalled();
    });

    it('an empty label leaves the default "Turn N" to the server', async () => {
        const server = fakeServer({ 'snapshot/capture': () => turn(1) });
        api.showInputBox.mockResolvedValueOnce('  ');
        await captureSnapshot(makeCtx(server));
        expect(server.calls('snapshot/capture')).toEqual([{ workspace: WS }]);
    });

    it('escape in the input box captures nothing', async () => {
        const server = fakeServer({ 'snapshot/capture': () => turn(1) });
        await captureSnapshot(makeCtx(server));
        expect(server.sendRequest).not.toHaveBeenCalled();
    });

    it('reports what the snapshot skipped', async () => {
        const server = fakeServer({
            'snapshot/capture': () => turn(1, { skipped: [{ path: 'node_modules', reason: 'excludedDirectory' }] }),
        });
        await captureSnapshot(makeCtx(server), { label: 'x' });
        expect(api.showInputBox).not.toHaveBeenCalled();
        expect(api.showInformationMessage.mock.calls[0][0]).toContain('node_modules (excludedDirectory)');
    });

    it('Mark Turn Finished captures phase "after"', async () => {
        const server = fakeServer({ 'snapshot/capture': () => turn(2, { sealed: true }) });
        await sealTurn(makeCtx(server));
        expect(server.calls('snapshot/capture')).toEqual([{ workspace: WS, phase: 'after' }]);
    });
});

describe('registered commands', () => {
    it('registers every palette command and reports failures instead of throwing', async () => {
        const server = fakeServer({
            'snapshot/undo': () => {
                throw { code: -32803, message: 'Another process held the lock', data: { reason: 'busy' } };
            },
        });
        const restart = vi.fn(async () => undefined);
        registerCommands(makeCtx(server), { restartServer: restart });
        for (const id of [
            Commands.captureSnapshot,
            Commands.undoTurn,
            Commands.redoTurn,
            Commands.undoTurns,
            Commands.showTurns,
            Commands.showTurnDiff,
            Commands.restartServer,
            Commands.undoToHere,
            Commands.redoToHere,
            Commands.diffTurn,
            Commands.diffFile,
        ]) {
            expect(api.state.commands.has(id), id).toBe(true);
        }
        // The server's own command ids are left to vscode-languageclient (it registers them).
        expect(api.state.commands.has('turnback.undo')).toBe(false);
        await api.state.commands.get(Commands.undoTurn)!();
        expect(api.showErrorMessage).toHaveBeenCalledWith('turnback: Another process held the lock', 'Show Output');
        await api.state.commands.get(Commands.restartServer)!();
        expect(restart).toHaveBeenCalled();
    });

    it('offers a restart when no server runs', async () => {
        registerCommands(makeCtx(undefined), { restartServer: async () => undefined });
        api.showErrorMessage.mockResolvedValueOnce('Restart Server');
        await api.state.commands.get(Commands.undoTurn)!();
        expect(api.showErrorMessage).toHaveBeenCalledWith('turnback: the server is not running.', 'Restart Server', 'Show Output');
        expect(api.executeCommand).toHaveBeenCalledWith(Commands.restartServer);
    });
});
