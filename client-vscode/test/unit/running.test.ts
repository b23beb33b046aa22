// Turns in progress (protocol.md): the status bar shows a running agent turn and follows it
// until it ends; undo and redo show the server's "turnRunning" refusal with an override.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import type { RunningTurn } from '../../src/common/protocol';
import { CANCEL, REDO_ANYWAY, restore, UNDO_ANYWAY } from '../../src/features/restore';
import { RUNNING_POLL_MS, TurnStatusBar } from '../../src/features/statusBar';
import { turnState } from '../../src/features/turns';
import { fakeServer, listOf, makeCtx, NOW, restoreResult, turn, WS } from './helpers';

beforeEach(() => api.resetVscodeApi());
afterEach(() => vi.useRealTimers());

const RUNNING: RunningTurn = {
    turn: 2,
    id: 'abc',
    harness: 'claude-code',
    harnessSession: 'c1f0',
    lastChangeAt: new Date(NOW).toISOString(),
    secondsSinceChange: 3,
    quietPeriod: 120,
};

function runningError() {
    return {
        code: -32803,
        message: 'Undo refused: turn 2 is still running (claude-code session c1f0 last changed the work tree 3 s ago).',
        data: { reason: 'turnRunning', turn: 2, harness: 'claude-code', harnessSession: 'c1f0', secondsSinceChange: 3, quietPeriod: 120 },
    };
}

function refusedOnce(kind: 'undo' | 'redo') {
    return fakeServer({
        [`snapshot/${kind}`]: (params) => {
            if (!params.force) {
                throw runningError();
            }
            return restoreResult(kind, 1);
        },
    });
}

describe('a running agent turn in the status bar', () => {
    it('shows the running turn, polls while it runs, and refreshes every view when it ends', async () => {
        vi.useFakeTimers();
        let running = true;
        const server = fakeServer({
            'snapshot/list': () =>
                listOf([turn(1), turn(2, { progress: running ? 'running' : 'interrupted' })], { running: running ? RUNNING : null }),
        });
        const ctx = makeCtx(server);
        const bar = new TurnStatusBar(ctx);
        await bar.update();
        const item = api.state.statusBarItems[0];
        expect(item.text).toBe('↶ turn 2 $(sync~spin) running');
        expect(item.tooltip).toContain('Turn 2 is running: claude-code session c1f0');
        expect(ctx.refresh).not.toHaveBeenCalled();

        running = false;
        await vi.advanceTimersByTimeAsync(RUNNING_POLL_MS);
        expect(server.calls('snapshot/list')).toHaveLength(2);
        expect(item.text).toBe('↶ turn 2');
        expect(ctx.refresh).toHaveBeenCalledTimes(1);
        await vi.advanceTimersByTimeAsync(RUNNING_POLL_MS * 3);
        expect(server.calls('snapshot/list')).toHaveLength(2); // no polling once it ended
        bar.dispose();
    });

    it("shows another session's running turn, which undo and redo here wait for, until it ends", async () => {
        vi.useFakeTimers();
        let running = true;
        const server = fakeServer({
            'snapshot/list': () =>
                listOf([turn(1)], { runningElsewhere: running ? { ...RUNNING, session: 'codex:7f' } : null }),
        });
        const ctx = makeCtx(server);
        const bar = new TurnStatusBar(ctx);
        await bar.update();
        const item = api.state.statusBarItems[0];
        expect(item.text).toBe('↶ turn 1 $(sync~spin)');
        expect(item.tooltip).toContain('Turn 2 of session "codex:7f" is running in this work tree');
        expect(item.tooltip).toContain('Undo and redo here wait');

        running = false;
        await vi.advanceTimersByTimeAsync(RUNNING_POLL_MS);
        expect(item.text).toBe('↶ turn 1');
        expect(item.tooltip).not.toContain('codex:7f');
        bar.dispose();
    });

    it('labels running and interrupted turns in pickers', () => {
        expect(turnState(turn(1, { progress: 'running' }))).toBe('active · running');
        expect(turnState(turn(1, { progress: 'interrupted', sealed: true }))).toBe('active · interrupted');
        expect(turnState(turn(1, { progress: 'sealed', sealed: true }))).toBe('active · finished');
    });
});

describe('the turnRunning refusal (-32803, reason "turnRunning")', () => {
    it('shows a modal naming the agent; "Undo anyway" retries with force', async () => {
        const server = refusedOnce('undo');
        api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, anyway: unknown) => anyway);
        const result = await restore(makeCtx(server), 'undo', { workspace: WS, count: 1 });

        const [message, options, ...items] = api.showWarningMessage.mock.calls[0];
        expect(message).toBe('Turn 2 is still running (claude-code session c1f0).');
        expect(options.modal).toBe(true);
        expect(options.detail).toContain('last changed the work tree 3 s ago');
        expect(items.map((i: { title: string }) => i.title)).toEqual([UNDO_ANYWAY, CANCEL]);
        expect(server.calls('snapshot/undo')).toEqual([
            { workspace: WS, count: 1 },
            { workspace: WS, count: 1, force: true },
        ]);
        expect(result?.turnsUndone).toBe(1);
    });

    it('"Cancel" (or escape) sends no retry and changes nothing', async () => {
        const server = refusedOnce('redo');
        const ctx = makeCtx(server);
        const result = await restore(ctx, 'redo', { workspace: WS });
        expect(api.showWarningMessage.mock.calls[0].slice(2).map((i: { title: string }) => i.title)).toEqual([REDO_ANYWAY, CANCEL]);
        expect(result).toBeUndefined();
        expect(server.calls('snapshot/redo')).toHaveLength(1);
        expect(ctx.refresh).not.toHaveBeenCalled();
    });
});
