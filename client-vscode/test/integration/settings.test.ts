// Settings reach the server as the extension sends them: initializationOptions, then
// workspace/configuration answers (filtered to the server's keys) and didChangeConfiguration.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { filterConfiguration } from '../../src/features/middleware';
import type { Turn } from '../../src/common/protocol';
import { fileUri, Repo, Sandbox, TestServer } from './harness';

let sandbox: Sandbox;
let repo: Repo;
let server: TestServer | undefined;

beforeEach(() => {
    sandbox = new Sandbox();
    repo = sandbox.repo();
});

afterEach(async () => {
    await server?.stop();
    server = undefined;
    sandbox.dispose();
});

/** The "turnback" section as VS Code's getConfiguration returns it: client keys included. */
function vscodeSection(overrides: Record<string, unknown>) {
    return { server: { path: '', python: '', args: [] }, trace: { server: 'off' }, codeLens: true, ...overrides };
}

async function lensCount(s: TestServer): Promise<number> {
    const uri = fileUri(repo.file('src/app.py'));
    const lenses: unknown[] = await s.request('textDocument/codeLens', { textDocument: { uri } });
    return lenses.length;
}

describe('settings', () => {
    it('neither the whole VS Code section (client-only keys included) nor the filtered one makes the server warn', async () => {
        server = await TestServer.start(sandbox, {
            folder: repo,
            configuration: () => vscodeSection({}),
        });
        await server.request('snapshot/list', {}); // after initialized has been handled
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(server.messages).toEqual([]);
        await server.stop();

        server = await TestServer.start(sandbox, {
            folder: repo,
            configuration: () => (filterConfiguration({ items: [{ section: 'turnback' }] }, [vscodeSection({})]) as unknown[])[0],
        });
        await server.request('snapshot/list', {}); // after initialized has been handled
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(server.messages).toEqual([]);
    });

    it('initializationOptions and configuration: codeLens off, a small size limit', async () => {
        let section: Record<string, unknown> = { codeLens: false, untrackedFileSizeLimit: 10 };
        server = await TestServer.start(sandbox, {
            folder: repo,
            initializationOptions: { turnback: section },
            configuration: () => section,
        });
        repo.write('big-untracked.txt', 'more than ten bytes\n');
        const t = await server.request<Turn>('snapshot/capture', {});
        expect(t.skipped).toEqual([{ path: 'big-untracked.txt', reason: 'tooLarge' }]);

        repo.write('src/app.py', 'changed by the agent\n');
        const uri = fileUri(repo.file('src/app.py'));
        await server.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: 'changed by the agent\n' } });
        expect(await lensCount(server)).toBe(0);

        // What vscode-languageclient sends when a synchronized setting changes, then the pull.
        section = { codeLens: true, untrackedFileSizeLimit: 10 };
        await server.notify('workspace/didChangeConfiguration', { settings: { turnback: { codeLens: true, untrackedFileSizeLimit: 10 } } });
        await vi.waitFor(async () => expect(await lensCount(server!)).toBe(4), { timeout: 5000, interval: 100 });
        expect(server.messages).toEqual([]);
    });

    it('a bad value is reported and its default used', async () => {
        server = await TestServer.start(sandbox, { folder: repo, initializationOptions: { turnsPerSession: 0 } });
        await server.waitFor(() => server!.messages.some((m) => m.message.includes('turnsPerSession')), 'a warning naming the setting');
    });
});
