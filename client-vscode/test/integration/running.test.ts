// Turns in progress against the real server: a turn an agent hook opened lists as running
// and its undo is refused with "turnRunning" (what the extension's modal reads), until forced.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListResult, RestoreResult } from '../../src/common/protocol';
import { isTurnRunning } from '../../src/common/protocol';
import { Repo, Sandbox, TestServer } from './harness';

let sandbox: Sandbox;
let home: Repo;
let server: TestServer;

beforeAll(async () => {
    sandbox = new Sandbox();
    home = sandbox.repo();
    server = await TestServer.start(sandbox, { folder: home });
});

afterAll(async () => {
    await server?.stop();
    sandbox?.dispose();
});

describe('a running agent turn', () => {
    it('lists as running, refuses undo with turnRunning, and undoes with force', async () => {
        const ws = { workspace: home.uri, session: 'claude-code:c1' };
        // What `turnback hook claude-code UserPromptSubmit` records (protocol.md, agent hooks).
        await server.request('snapshot/capture', { ...ws, label: 'Refactor', metadata: { harness: 'claude-code', sessionId: 'c1' } });
        home.write('src/app.py', 'print("agent")\n');

        const list = await server.request<ListResult>('snapshot/list', ws);
        expect(list.turns[0].progress).toBe('running');
        expect(list.running).toMatchObject({ turn: 1, harness: 'claude-code', harnessSession: 'c1', quietPeriod: 120 });

        const refused = await server.requestError('snapshot/undo', ws);
        expect(isTurnRunning(refused)).toBe(true);
        expect(refused.data).toMatchObject({ reason: 'turnRunning', turn: 1, harness: 'claude-code', harnessSession: 'c1' });
        expect(home.read('src/app.py')).toBe('print("agent")\n');

        const forced = await server.request<RestoreResult>('snapshot/undo', { ...ws, force: true });
        expect(forced.turnsUndone).toBe(1);
        expect(home.read('src/app.py')).toBe("def greet(name):\n    return 'hello ' + name\n");
    });
});
