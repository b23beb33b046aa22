import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

// The language client is replaced by a manager whose "server" is a fake requester.
const shared = vi.hoisted(() => ({ requester: undefined as unknown, managers: [] as any[] }));
const managers = shared.managers;
vi.mock('../../src/common/server', async () => {
    const { EventEmitter } = await import('./fakes/vscode');
    class ServerManager {
        running = new EventEmitter<boolean>();
        changes = new EventEmitter<unknown>();
        onDidChangeRunning = this.running.event;
        onDidChangeTimeline = this.changes.event;
        current: unknown = undefined;
        restart = vi.fn(async () => {
            this.current = shared.requester;
            this.running.fire(true);
        });
        stop = vi.fn(async () => undefined);
        dispose = vi.fn();
        constructor(public options: unknown) {
            shared.managers.push(this);
        }
    }
    return { ServerManager };
});

import * as api from './fakes/vscodeapi';
import { activate, deactivate } from '../../src/extension';
import { fakeServer, listOf, turn } from './helpers';

beforeEach(() => {
    api.resetVscodeApi();
    managers.length = 0;
});

async function activated(server = fakeServer({ 'snapshot/list': () => listOf([turn(1), turn(2)]) }), extensionDir = '/ext') {
    const context = {
        subscriptions: [] as { dispose(): unknown }[],
        extension: { packageJSON: { version: '0.1.0' } },
        asAbsolutePath: (relative: string) => path.join(extensionDir, relative),
        globalStorageUri: { fsPath: '/storage/turnback.turnback' },
    };
    const channel = { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn(), appendLine: vi.fn(), show: vi.fn(), dispose: vi.fn() };
    api.createOutputChannel.mockReturnValue(channel);
    shared.requester = { sendRequest: server.sendRequest };
    await activate(context as any);
    return { context, server, manager: managers[0] };
}

describe('activate', () => {
    it('starts the server, registers commands, the content provider, the view and the status bar', async () => {
        const { manager, context } = await activated();
        expect(manager.restart).toHaveBeenCalledTimes(1);
        expect(api.state.commands.has('turnback.showTurns')).toBe(true);
        expect(api.registerTextDocumentContentProvider.mock.calls[0][0]).toBe('turnback');
        expect(api.createTreeView.mock.calls[0][0]).toBe('turnback.turns');
        expect(api.executeCommand).toHaveBeenCalledWith('setContext', 'turnback.serverRunning', true);
        await vi.waitFor(() => expect(api.state.statusBarItems[0].text).toBe('↶ turn 2'));
        expect(context.subscriptions.length).toBeGreaterThan(10);
        // No bundled wheel (a development host): no bundled server, turnback from PATH or Python.
        expect(manager.options.bundle).toBeUndefined();
        await deactivate();
        expect(manager.stop).toHaveBeenCalled();
    });

    it('a .vsix that carries the server wheel gives the manager its wheels, storage and version (the env key)', async () => {
        const ext = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-ext-'));
        fs.mkdirSync(path.join(ext, 'bundled', 'wheels'), { recursive: true });
        fs.writeFileSync(path.join(ext, 'bundled', 'wheels', 'turnback-0.1.0-py3-none-any.whl'), '');
        const { manager } = await activated(undefined, ext);
        expect(manager.options.bundle).toEqual({ wheelsDir: path.join(ext, 'bundled', 'wheels'), storageDir: '/storage/turnback.turnback', version: '0.1.0' });
        await deactivate();
        fs.rmSync(ext, { recursive: true, force: true });
    });

    it('snapshot/didChange refreshes the status bar', async () => {
        const turns = [turn(1)];
        const server = fakeServer({ 'snapshot/list': () => listOf(turns) });
        const { manager } = await activated(server);
        await vi.waitFor(() => expect(api.state.statusBarItems[0].text).toBe('↶ turn 1'));
        turns.push(turn(2));
        manager.changes.fire({ workspace: 'file:///ws', session: 'default' });
        await vi.waitFor(() => expect(api.state.statusBarItems[0].text).toBe('↶ turn 2'));
    });

    it('a change of turnback.server.* restarts the server; other settings do not', async () => {
        const { manager } = await activated();
        const listener = api.onDidChangeConfiguration.mock.calls[0][0];
        listener({ affectsConfiguration: (s: string) => 'turnback.codeLens'.startsWith(s) });
        expect(manager.restart).toHaveBeenCalledTimes(1);
        listener({ affectsConfiguration: (s: string) => 'turnback.server.python'.startsWith(s) });
        expect(manager.restart).toHaveBeenCalledTimes(2);
    });

    it('"turnback: Restart Server" restarts', async () => {
        const { manager } = await activated();
        await api.state.commands.get('turnback.restartServer')!();
        expect(manager.restart).toHaveBeenCalledTimes(2);
    });
});
