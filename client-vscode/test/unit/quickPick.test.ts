import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { showTurns, turnActionItems, turnPickItems } from '../../src/features/quickPick';
import { fakeServer, listOf, makeCtx, NOW, restoreResult, turn, WS } from './helpers';

beforeEach(() => api.resetVscodeApi());

const files = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `f${i}.py`, oldPath: null, status: 'modified' as const }));

describe('quick pick items from snapshot/list', () => {
    it('one item per turn, newest first, with label, age, files changed and state', () => {
        const list = listOf([
            turn(1, { label: 'Add tests', files: files(1), sealed: true }),
            turn(2, { label: 'Fix the parser', files: files(3) }),
            turn(3, { state: 'undone', files: files(2) }),
        ]);
        const items = turnPickItems(list, NOW);
        expect(items.map((i) => i.label)).toEqual(['$(discard) Turn 3', '$(history) Fix the parser', '$(history) Add tests']);
        expect(items.map((i) => i.description)).toEqual(['turn 3 · 7 min ago', 'turn 2 · 8 min ago', 'turn 1 · 9 min ago']);
        expect(items.map((i) => i.detail)).toEqual(['2 files changed · undone', '3 files changed · active', '1 file changed · active · finished']);
        expect(items[1].turn.turn).toBe(2);
    });

    it('without includeFiles the detail is only the state', () => {
        expect(turnPickItems(listOf([turn(1)]), NOW)[0].detail).toBe('active');
    });

    it('actions: undo to here counts the active turns at or after it', () => {
        const list = listOf([turn(1), turn(2), turn(3), turn(4, { state: 'undone' })]);
        const actions = turnActionItems(list, list.turns.find((t) => t.turn === 2)!);
        expect(actions.map((a) => a.action)).toEqual(['diff', 'undo']);
        expect(actions[1]).toMatchObject({ label: '$(discard) Undo To Here', count: 2 });
    });

    it('actions: an undone turn offers redo to here', () => {
        const list = listOf([turn(1), turn(2, { state: 'undone' }), turn(3, { state: 'undone' })]);
        const actions = turnActionItems(list, list.turns.find((t) => t.turn === 3)!);
        expect(actions[1]).toMatchObject({ action: 'redo', count: 2 });
    });
});

describe('turnback: Show Turns', () => {
    it('lists with includeFiles; Undo To Here undoes down to the chosen turn', async () => {
        const server = fakeServer({
            'snapshot/list': () => listOf([turn(1, { files: files(1) }), turn(2, { files: files(2) }), turn(3, { files: files(1) })]),
            'snapshot/undo': () => restoreResult('undo', 2),
        });
        api.showQuickPick
            .mockImplementationOnce(async (items: any[]) => items.find((i) => i.turn.turn === 2))
            .mockImplementationOnce(async (items: any[]) => items.find((i) => i.action === 'undo'));
        await showTurns(makeCtx(server));
        expect(server.calls('snapshot/list')).toEqual([{ workspace: WS, includeFiles: true }]);
        expect(api.showQuickPick.mock.calls[0][0]).toHaveLength(3);
        expect(server.calls('snapshot/undo')).toEqual([{ workspace: WS, session: 'default', turn: 'aaaaaaaaaaaaaaa2' }]);
    });

    it('Show Diff opens the chosen turn diff', async () => {
        const t = turn(1, { files: files(2) });
        const server = fakeServer({
            'snapshot/list': () => listOf([t]),
            'snapshot/diff': () => ({
                turn: t,
                files: files(2).map((f) => ({ ...f, binary: false, additions: 1, deletions: 0, hunks: [], diff: '' })),
            }),
        });
        api.showQuickPick
            .mockImplementationOnce(async (items: any[]) => items[0])
            .mockImplementationOnce(async (items: any[]) => items.find((i) => i.action === 'diff'));
        await showTurns(makeCtx(server));
        expect(server.calls('snapshot/diff')).toEqual([{ workspace: WS, session: 'default', turn: t.id, context: 0 }]);
        expect(api.executeCommand.mock.calls[0][0]).toBe('vscode.changes');
    });

    it('escape at either step does nothing', async () => {
        const server = fakeServer({ 'snapshot/list': () => listOf([turn(1)]) });
        await showTurns(makeCtx(server));
        api.showQuickPick.mockImplementationOnce(async (items: any[]) => items[0]);
        await showTurns(makeCtx(server));
        expect(server.calls('snapshot/undo')).toEqual([]);
    });

    it('an empty timeline says so instead of an empty pick', async () => {
        const server = fakeServer({ 'snapshot/list': () => listOf([], { sessions: [] }) });
        await showTurns(makeCtx(server));
        expect(api.showQuickPick).not.toHaveBeenCalled();
        expect(api.showInformationMessage.mock.calls[0][0]).toContain('no turns yet');
    });
});
