import { beforeEach, describe, expect, it } from 'vitest';
import { vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import type { RescuedVersion } from '../../src/common/protocol';
import { PUT_BACK_ANYWAY, rescuePickItems, rescueVersion } from '../../src/features/rescue';
import { conflictError, fakeServer, listOf, makeCtx, NOW, turn, WS } from './helpers';

beforeEach(() => api.resetVscodeApi());

const version = (id: string, reason: RescuedVersion['reason'], files: string[], minutesAgo = 3): RescuedVersion => ({
    id,
    reason,
    files,
    createdAt: new Date(NOW - minutesAgo * 60_000).toISOString(),
});

function rescued(v: RescuedVersion, fields: Record<string, unknown> = {}) {
    return {
        session: 'default',
        rescued: v,
        files: v.files.map((path) => ({ path, action: 'modified' })),
        kept: [],
        replaced: version('f02b9e61c5d7a843', 'replacedByRescue', v.files, 0),
        message: `Put back ${v.files.length} file of rescued version ${v.id}; what they replaced is rescued version f02b9e61c5d7a843`,
        dryRun: false,
        ...fields,
    };
}

describe('rescued versions as quick pick items', () => {
    // Proves each item names the version's files, why it was saved and when.
    it('one item per version: files, reason and age', () => {
        const items = rescuePickItems(
            [version('8c61d0a4f3b2e917', 'forcedRedo', ['src/app.py']), version('1111222233334444', 'forcedUndo', ['a.py', 'b.py', 'c.py'], 60)],
            NOW,
        );
        expect(items.map((i) => i.label)).toEqual(['$(history) src/app.py', '$(history) a.py and 2 more files']);
        expect(items.map((i) => i.description)).toEqual(['overwritten by a forced redo · 3 min ago', 'overwritten by a forced undo · 1 h ago']);
        expect(items[1].detail).toBe('a.py, b.py, c.py');
    });
});

describe('turnback: Put Back a Rescued Version', () => {
    // Proves the chosen version is put back in the listed session, and the server's summary is shown.
    it('puts back the chosen version in the listed session', async () => {
        const v = version('8c61d0a4f3b2e917', 'forcedRedo', ['src/app.py']);
        const server = fakeServer({
            'snapshot/list': () => listOf([turn(1)], { rescued: [v] }),
            'snapshot/rescue': () => rescued(v),
        });
        api.showQuickPick.mockImplementationOnce(async (items: any[]) => items[0]);
        const ctx = makeCtx(server);
        const result = await rescueVersion(ctx);
        expect(server.calls('snapshot/rescue')).toEqual([{ workspace: WS, session: 'default', id: v.id }]);
        expect(result?.replaced?.reason).toBe('replacedByRescue');
        expect(ctx.refresh).toHaveBeenCalled();
        expect(api.showInformationMessage.mock.calls[0][0]).toContain('Put back 1 file of rescued version 8c61d0a4f3b2e917');
    });

    // Proves a version named by its caller (a forced restore's "Put Back My Changes") is put
    // back at once, in its own session, with no list and no pick.
    it('puts back a version named by id without asking', async () => {
        const v = version('8c61d0a4f3b2e917', 'forcedUndo', ['src/app.py']);
        const server = fakeServer({ 'snapshot/rescue': () => rescued(v) });
        await rescueVersion(makeCtx(server), { workspace: WS, session: 'claude-code:c1', id: v.id });
        expect(server.calls('snapshot/rescue')).toEqual([{ workspace: WS, session: 'claude-code:c1', id: v.id }]);
        expect(server.calls('snapshot/list')).toEqual([]);
        expect(api.showQuickPick).not.toHaveBeenCalled();
    });

    // Proves a session without rescued versions says so and offers no pick.
    it('says so when there is nothing to put back', async () => {
        const server = fakeServer({ 'snapshot/list': () => listOf([turn(1)], { rescued: [] }) });
        expect(await rescueVersion(makeCtx(server))).toBeUndefined();
        expect(api.showQuickPick).not.toHaveBeenCalled();
        expect(api.showInformationMessage.mock.calls[0][0]).toContain('no rescued versions');
    });

    // Proves unsaved editor text is overwritten only after the user agrees, by a forced retry.
    it('asks before overwriting unsaved editors, then retries with force', async () => {
        const v = version('8c61d0a4f3b2e917', 'forcedUndo', ['src/app.py']);
        let tries = 0;
        const server = fakeServer({
            'snapshot/list': () => listOf([turn(1)], { rescued: [v] }),
            'snapshot/rescue': () => {
                tries += 1;
                if (tries === 1) {
                    throw conflictError(['src/app.py']);
                }
                return rescued(v);
            },
        });
        api.showQuickPick.mockImplementationOnce(async (items: any[]) => items[0]);
        api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, ...items: any[]) => items.find((i) => i.title === PUT_BACK_ANYWAY));
        await rescueVersion(makeCtx(server));
        expect(server.calls('snapshot/rescue')).toEqual([
            { workspace: WS, session: 'default', id: v.id },
            { workspace: WS, session: 'default', id: v.id, force: true },
        ]);
    });

    // Proves cancelling the modal (or the pick) writes nothing.
    it('cancelled at the pick or at the modal, nothing is put back', async () => {
        const v = version('8c61d0a4f3b2e917', 'forcedUndo', ['src/app.py']);
        const server = fakeServer({
            'snapshot/list': () => listOf([turn(1)], { rescued: [v] }),
            'snapshot/rescue': () => {
                throw conflictError(['src/app.py']);
            },
        });
        await rescueVersion(makeCtx(server)); // the pick escaped
        expect(server.calls('snapshot/rescue')).toEqual([]);
        api.showQuickPick.mockImplementationOnce(async (items: any[]) => items[0]);
        expect(await rescueVersion(makeCtx(server))).toBeUndefined(); // the modal cancelled
        expect(server.calls('snapshot/rescue')).toHaveLength(1);
    });
});
