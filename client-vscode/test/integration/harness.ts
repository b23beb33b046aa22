// Starts the real Python server (`python -m turnback serve`, stdio) and speaks LSP to it with
// vscode-jsonrpc, in throwaway git repositories under a throwaway HOME and data directory.
import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { pathToFileURL } from 'url';
import { createMessageConnection, MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type { DidChangeParams } from '../../src/common/protocol';
import { defaultDeps, resolveServerCommand, serverExecutable } from '../../src/common/serverCommand';

/** TURNBACK_PYTHON, else the repository's .venv, else python3. */
export function findPython(): string {
    if (process.env.TURNBACK_PYTHON) {
        return process.env.TURNBACK_PYTHON;
    }
    const venv = path.resolve(__dirname, '..', '..', '..', '.venv', 'bin', 'python');
    return fs.existsSync(venv) ? venv : 'python3';
}

export const fileUri = (p: string) => pathToFileURL(p).toString();

/** A temp directory tree for one test file: HOME, XDG config, turnback data, repositories. */
export class Sandbox {
    readonly base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-it-')));
    readonly home = path.join(this.base, 'home');
    readonly data = path.join(this.base, 'data');
    private repos = 0;

    constructor() {
        fs.mkdirSync(path.join(this.home, '.config'), { recursive: true });
        fs.mkdirSync(this.data);
    }

    get env(): NodeJS.ProcessEnv {
        return {
            ...process.env,
            HOME: this.home,
            XDG_CONFIG_HOME: path.join(this.home, '.config'),
            XDG_DATA_HOME: path.join(this.home, '.local', 'share'),
            TURNBACK_DATA_DIR: this.data,
            GIT_CONFIG_NOSYSTEM: '1',
            GIT_AUTHOR_NAME: 'Test',
            GIT_AUTHOR_EMAIL: 'test@example.invalid',
            GIT_COMMITTER_NAME: 'Test',
            GIT_COMMITTER_EMAIL: 'test@example.invalid',
        };
    }

    git(repo: string, ...args: string[]): string {
        return execFileSync('git', args, { cwd: repo, env: this.env, encoding: 'utf8' });
    }

    /** A git repository with committed files. */
    repo(files: Record<string, string> = { 'src/app.py': "def greet(name):\n    return 'hello ' + name\n", 'README.md': '# demo\n' }): Repo {
        const root = path.join(this.base, `repo${++this.repos}`);
        fs.mkdirSync(root);
        this.git(root, 'init', '-q', '-b', 'main');
        const repo = new Repo(root);
        for (const [name, text] of Object.entries(files)) {
            repo.write(name, text);
        }
        this.git(root, 'add', '-A');
        this.git(root, 'commit', '-q', '-m', 'initial');
        return repo;
    }

    /** The turnback CLI, as an agent harness runs it. */
    cli(repo: Repo, ...args: string[]): string {
        return execFileSync(findPython(), ['-m', 'turnback', ...args, '-C', repo.root], { env: this.env, encoding: 'utf8' });
    }

    dispose(): void {
        fs.rmSync(this.base, { recursive: true, force: true });
    }
}

export class Repo {
    constructor(readonly root: string) {}
    get uri(): string {
        return fileUri(this.root);
    }
    file(name: string): string {
        return path.join(this.root, ...name.split('/'));
    }
    write(name: string, text: string): void {
        fs.mkdirSync(path.dirname(this.file(name)), { recursive: true });
        fs.writeFileSync(this.file(name), text);
    }
    read(name: string): string | undefined {
        try {
            return fs.readFileSync(this.file(name), 'utf8');
        } catch {
            return undefined;
        }
    }
    remove(name: string): void {
        fs.rmSync(this.file(name));
    }
    rename(from: string, to: string): void {
        fs.mkdirSync(path.dirname(this.file(to)), { recursive: true });
        fs.renameSync(this.file(from), this.file(to));
    }
}

export interface ServerOptions {
    /** The first workspace folder (requests default to it). */
    folder: Repo;
    initializationOptions?: unknown;
    /** The answer to `workspace/configuration` for section "turnback". */
    configuration?: () => unknown;
}

/** One running server and what it sent us. */
export class TestServer {
    readonly messages: { type: number; message: string }[] = [];
    readonly logs: string[] = [];
    readonly didChange: DidChangeParams[] = [];
    readonly appliedEdits: unknown[] = [];
    readonly progress: unknown[] = [];
    stderr = '';
    initializeResult: any;
    private waiters: { test: () => boolean; resolve: () => void }[] = [];

    private constructor(
        readonly process: ChildProcess,
        readonly connection: MessageConnection,
    ) {}

    static async start(sandbox: Sandbox, options: ServerOptions): Promise<TestServer> {
        // Launched as the extension launches it (serverCommand.ts): `<python> -m turnback serve`
        // when no turnback.server.path is set and no `turnback` is on PATH.
        const command = await resolveServerCommand(
            { path: '', python: findPython(), args: [] },
            { ...defaultDeps, which: () => undefined },
        );
        const executable = serverExecutable(command, options.folder.root, sandbox.env);
        const child = spawn(executable.command, executable.args, { ...executable.options, stdio: ['pipe', 'pipe', 'pipe'] });
        const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
        const server = new TestServer(child, connection);
        child.stderr!.on('data', (chunk) => (server.stderr += String(chunk)));
        const spawnError = new Promise<never>((_, reject) => {
            child.on('error', (error) => reject(new Error(`could not start ${findPython()} -m turnback serve: ${error.message}`)));
            child.on('exit', (code) =>
                reject(new Error(`the server exited (${code}) before initializing; is turnback installed for ${findPython()}? Set TURNBACK_PYTHON.\n${server.stderr}`)),
            );
        });
        spawnError.catch(() => undefined);

        connection.onRequest('workspace/configuration', (params: { items: { section?: string }[] }) =>
            params.items.map((item) => (item.section === 'turnback' ? (options.configuration?.() ?? null) : null)),
        );
        connection.onRequest('window/workDoneProgress/create', () => null);
        connection.onRequest('client/registerCapability', () => null);
        connection.onRequest('workspace/codeLens/refresh', () => null);
        connection.onRequest('workspace/applyEdit', (params: unknown) => {
            server.appliedEdits.push(params);
            return { applied: true };
        });
        connection.onNotification('window/showMessage', (p: { type: number; message: string }) => server.note(() => server.messages.push(p)));
        connection.onNotification('window/logMessage', (p: { message: string }) => server.logs.push(p.message));
        connection.onNotification('$/progress', (p: unknown) => server.progress.push(p));
        connection.onNotification('snapshot/didChange', (p: DidChangeParams) => server.note(() => server.didChange.push(p)));
        connection.listen();

        const initialize = connection.sendRequest('initialize', {
            processId: process.pid,
            clientInfo: { name: 'turnback-vscode-integration-test' },
            rootUri: options.folder.uri,
            workspaceFolders: [{ uri: options.folder.uri, name: path.basename(options.folder.root) }],
            initializationOptions: options.initializationOptions ?? null,
            capabilities: {
                workspace: {
                    configuration: true,
                    workspaceFolders: true,
                    applyEdit: true,
                    didChangeConfiguration: { dynamicRegistration: true },
                    executeCommand: { dynamicRegistration: true },
                    codeLens: { refreshSupport: true },
                    workspaceEdit: { documentChanges: true },
                },
                textDocument: { synchronization: { didSave: true }, codeLens: {} },
                window: { workDoneProgress: true, showMessage: {} },
            },
        });
        server.initializeResult = await Promise.race([initialize, spawnError]);
        await connection.sendNotification('initialized', {});
        return server;
    }

    private note(record: () => void): void {
        record();
        this.waiters = this.waiters.filter((w) => {
            if (w.test()) {
                w.resolve();
                return false;
            }
            return true;
        });
    }

    /** Resolves when `test` holds (checked on each notification), or fails after `ms`. */
    waitFor(test: () => boolean, what: string, ms = 10000): Promise<void> {
        if (test()) {
            return Promise.resolve();
        }
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
            this.waiters.push({
                test,
                resolve: () => {
                    clearTimeout(timer);
                    resolve();
                },
            });
        });
    }

    request<R = any>(method: string, params: unknown): Promise<R> {
        return this.connection.sendRequest(method, params) as Promise<R>;
    }

    /** The error a request fails with (fails the test if it succeeds). */
    async requestError(method: string, params: unknown): Promise<{ code: number; message: string; data: any }> {
        try {
            const result = await this.request(method, params);
            throw new Error(`${method} succeeded: ${JSON.stringify(result)}`);
        } catch (error) {
            const e = error as { code?: number; message: string; data?: unknown };
            if (typeof e.code !== 'number') {
                throw error;
            }
            return { code: e.code, message: e.message, data: e.data };
        }
    }

    notify(method: string, params: unknown): Promise<void> {
        return this.connection.sendNotification(method, params);
    }

    async stop(): Promise<void> {
        try {
            await Promise.race([this.request('shutdown', null), new Promise((r) => setTimeout(r, 3000))]);
            await this.notify('exit', null);
        } catch {
            // already gone
        }
        const exited = new Promise((resolve) => this.process.once('exit', resolve));
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (this.process.exitCode === null) {
            this.process.kill();
        }
        this.connection.dispose();
    }
}
