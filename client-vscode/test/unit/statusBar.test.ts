import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { TurnStatusBar } from '../../src/features/statusBar';
import { formatAge, redoCountTo, statusSummary, undoCountTo } from '../../src/features/turns';
import { fakeServer, listOf, makeCtx, NOW, turn } from './helpers';

beforeEach(() => api.resetVscodeApi());

describe('status bar', () => {
    it('shows the current turn and that redo is possible', async () => {
        const server = fakeServer({ 'snapshot/list': () => listOf([turn(1), turn(2), turn(3, { state: 'undone' })]) });
        const bar = new TurnStatusBar(makeCtx(server));
        await bar.update();
        const item = api.state.statusBarItems[0];
        expect(item.text).toBe('↶ turn 2 ↷1');
        expect(item.tooltip).toContain('Undo: possible (2 active turns)');
        expect(item.tooltip).toContain('Redo: possible (1 undone turn)');
        expect(item.command).toBe('turnback.showTurns');
        expect(item.visible).toBe(true);
        expect(api.executeCommand).toHaveBeenCalledWith('setContext', 'turnback.canUndo', true);
        expect(api.executeCommand).toHaveBeenCalledWith('setContext', 'turnback.canRedo', true);
    });

    it('says when there is nothing yet, or when the server is down', async () => {
        const empty = new TurnStatusBar(makeCtx(fakeServer({ 'snapshot/list': () => listOf([], { sessions: [] }) })));
        await empty.update();
        expect(api.state.statusBarItems[0].text).toBe('↶ no turns');
        expect(api.executeCommand).toHaveBeenCalledWith('setContext', 'turnback.canUndo', false);

        const down = new TurnStatusBar(makeCtx(undefined));
        await down.update();
        expect(api.state.statusBarItems[1].text).toContain('$(warning)');
        expect(api.state.statusBarItems[1].tooltip).toContain('not running');
    });

    it('is hidden without a workspace folder', async () => {
        api.state.folders = [];
        const bar = new TurnStatusBar(makeCtx(fakeServer()));
        await bar.update();
        expect(api.state.statusBarItems[0].visible).toBe(false);
    });

    it('statusSummary when every turn is undone', () => {
        expect(statusSummary(listOf([turn(1, { state: 'undone' })])).text).toBe('↶ all undone ↷1');
    });
});

describe('timeline helpers', () => {
    it('undo/redo counts to a turn', () => {
        const turns = [turn(5, { state: 'undone' }), turn(4, { state: 'undone' }), turn(3), turn(2), turn(1)];
        expect(undoCountTo(turns, { turn: 1 })).toBe(3);
        expect(undoCountTo(turns, { turn: 3 })).toBe(1);
        expect(redoCountTo(turns, { turn: 4 })).toBe(1);
        expect(redoCountTo(turns, { turn: 5 })).toBe(2);
    });

    it('formatAge', () => {
        const ago = (ms: number) => formatAge(new Date(NOW - ms).toISOString(), NOW);
        expect(ago(1000)).toBe('just now');
        expect(ago(42_000)).toBe('42 s ago');
        expect(ago(5 * 60_000)).toBe('5 min ago');
        expect(ago(3 * 3600_000)).toBe('3 h ago');
        expect(ago(4 * 86400_000)).toBe('4 d ago');
        expect(formatAge('not a date', NOW)).toBe('');
    });
});

describe('status bar ignores stale answers', () => {
    it('a slow earlier update does not overwrite a newer one', async () => {
        let release: (v: unknown) => void = () => undefined;
        let call = 0;
        const server = fakeServer({
            'snapshot/list': () => {
                call += 1;
                if (call === 1) {
                    return new Promise((resolve) => (release = () => resolve(listOf([turn(1)]))));
                }
                return listOf([turn(1), turn(2)]);
            },
        });
        const bar = new TurnStatusBar(makeCtx(server));
        const first = bar.update();
        await bar.update();
        release(undefined);
        await first;
        expect(api.state.statusBarItems[0].text).toBe('↶ turn 2');
        vi.restoreAllMocks();
    });
});
