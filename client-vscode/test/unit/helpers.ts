// Shared fixtures: timelines as the server returns them, and a context whose requests are
// answered by per-method handlers.
import { vi } from 'vitest';
import { Requester, TurnbackApi } from '../../src/features/api';
import type { TurnbackContext } from '../../src/features/context';
import type { ListResult, Turn } from '../../src/common/protocol';

export const WS = 'file:///ws';
export const NOW = Date.parse('2026-11-21T20:00:00.000Z');

export function turn(n: number, fields: Partial<Turn> = {}): Turn {
    return {
        id: `${n}`.padStart(16, 'a'),
        session: 'default',
        turn: n,
        label: `Turn ${n}`,
        createdAt: new Date(NOW - (10 - n) * 60_000).toISOString(),
        state: 'active',
        sealed: false,
        metadata: null,
        skipped: [],
        ...fields,
    };
}

/** Newest first, like the server. */
export function listOf(turns: Turn[], fields: Partial<ListResult> = {}): ListResult {
    const sorted = [...turns].sort((a, b) => b.turn - a.turn);
    return {
        session: 'default',
        turns: sorted,
        canUndo: sorted.some((t) => t.state === 'active'),
        canRedo: sorted.some((t) => t.state === 'undone'),
        sessions: [{ id: 'default', turns: sorted.length, updatedAt: new Date(NOW).toISOString() }],
        ...fields,
    };
}

export type Handler = (params: any) => unknown;

export interface FakeServer {
    handlers: Record<string, Handler>;
    sendRequest: ReturnType<typeof vi.fn>;
    calls(method: string): any[];
}

export function fakeServer(handlers: Record<string, Handler> = {}): FakeServer {
    const server: FakeServer = {
        handlers,
        sendRequest: vi.fn(async (method: string, params: unknown) => {
            const handler = server.handlers[method];
            if (!handler) {
                throw { code: -32601, message: `no handler for ${method} in this test` };
            }
            return handler(params);
        }),
        calls: (method) => server.sendRequest.mock.calls.filter(([m]) => m === method).map(([, p]) => p),
    };
    return server;
}

export function makeCtx(server: FakeServer | undefined, root = '/ws'): TurnbackContext & { refresh: ReturnType<typeof vi.fn> } {
    const requester: Requester | undefined = server ? { sendRequest: server.sendRequest as any } : undefined;
    return {
        api: new TurnbackApi(() => requester),
        target: () => ({ workspace: WS }),
        rootFor: () => root,
        refresh: vi.fn(),
    };
}

export function restoreResult(kind: 'undo' | 'redo', count: number, fields: Record<string, unknown> = {}) {
    return {
        [kind === 'undo' ? 'turnsUndone' : 'turnsRedone']: count,
        turns: [],
        files: [{ path: 'src/app.py', action: 'modified' }],
        kept: [],
        message: count ? `${kind === 'undo' ? 'Undid' : 'Redid'} ${count} turn (1 file changed)` : `Nothing to ${kind}`,
        dryRun: false,
        ...fields,
    };
}

export function conflictError(files: string[]) {
    return {
        code: -32803,
        message: `Undo would overwrite changes made after the turn: ${files.join(', ')}. Retry with force to overwrite them (redo can bring them back).`,
        data: { reason: 'conflict', files },
    };
}
