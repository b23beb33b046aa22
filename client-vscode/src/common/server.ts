// Starts, stops and restarts `turnback serve` (stdio) under vscode-languageclient.
import { Disposable, EventEmitter, LogOutputChannel, WorkspaceFolder } from 'vscode';
import {
    CloseAction,
    ErrorAction,
    ErrorHandler,
    LanguageClient,
    LanguageClientOptions,
    Middleware,
    RevealOutputChannelOn,
    State,
} from 'vscode-languageclient/node';
import { SERVER_ID, SERVER_NAME } from './constants';
import { traceError, traceInfo } from './logging';
import { DidChangeParams, Methods } from './protocol';
import { ensurePrivateEnv, PrivateEnvError } from './privateEnv';
import { NoPythonError } from './python';
import { selectedInterpreter } from './pythonExtension';
import { BundledServer, resolveServerCommand, ServerCommand, serverExecutable, ServerNotFoundError } from './serverCommand';
import { getLaunchSettings, getServerSettings, SERVER_SETTING_SECTIONS } from './settings';
import { ServerProcess, START_TIMEOUT_MS, withTimeout } from './serverProcess';
import { getWorkspaceFolders, showErrorMessage, withNotificationProgress } from './vscodeapi';

/** Where the server the extension brought lives, and where it is installed. */
export interface BundleLocation {
    /** bundled/wheels in the installed extension. */
    wheelsDir: string;
    /** The extension's global storage folder. */
    storageDir: string;
    /** The extension's version: one private environment per version. */
    version: string;
}

export interface ServerManagerOptions {
    outputChannel: LogOutputChannel;
    middleware: Middleware;
    /** Shows the output channel and opens the settings, for the error message's buttons. */
    showOutput(): void;
    openSettings(): void;
    /** The server the extension brought; absent in a development host without `make vsix`. */
    bundle?: BundleLocation;
}

/** Installs the bundled server on first use, with a progress notification only while it installs. */
export function bundledServer(bundle: BundleLocation, folder: WorkspaceFolder | undefined): BundledServer {
    return {
        selectedInterpreter: () => selectedInterpreter(folder?.uri),
        ensure: async (base) => {
            let report: ((message: string) => void) | undefined;
            let opened = false;
            let latest = '';
            let done!: () => void;
            const finished = new Promise<void>((resolve) => (done = resolve));
            try {
                return await ensurePrivateEnv(base, {
                    ...bundle,
                    report: (message) => {
                        traceInfo(`Setting up the server: ${message}`);
                        latest = message;
                        if (!opened) {
                            opened = true;
                            void withNotificationProgress('turnback: installing its server', (r) => {
                                report = r;
                                r(latest);
                                return finished;
                            });
                        }
                        report?.(message);
                    },
                });
            } finally {
                done();
            }
        },
    };
}

export class ServerManager implements Disposable {
    private client: LanguageClient | undefined;
    private clientDisposables: Disposable[] = [];
    private starting: Promise<void> | undefined;
    private readonly stateEmitter = new EventEmitter<boolean>();
    private readonly changeEmitter = new EventEmitter<DidChangeParams>();
    /** Fires true when a server is running (after start), false when it stopped. */
    readonly onDidChangeRunning = this.stateEmitter.event;
    /** `snapshot/didChange` from whichever server is current. */
    readonly onDidChangeTimeline = this.changeEmitter.event;

    constructor(private readonly options: ServerManagerOptions) {}

    /** The running client, if any: what requests go through. */
    get current(): LanguageClient | undefined {
        return this.client?.state === State.Running ? this.client : undefined;
    }

    /** Stops any server and starts a new one; serialised, so quick restarts do not overlap. */
    restart(): Promise<void> {
        const previous = this.starting ?? Promise.resolve();
        const next = previous.then(() => this.doRestart());
        this.starting = next.finally(() => {
            if (this.starting === next) {
                this.starting = undefined;
            }
        });
        return next;
    }

    private async doRestart(): Promise<void> {
        await this.stop();
        const folder: WorkspaceFolder | undefined = getWorkspaceFolders()[0];
        let command: ServerCommand;
        try {
            const bundled = this.options.bundle ? bundledServer(this.options.bundle, folder) : undefined;
            command = await resolveServerCommand(getLaunchSettings(folder), undefined, bundled);
        } catch (error) {
            const known = error instanceof ServerNotFoundError || error instanceof PrivateEnvError || error instanceof NoPythonError;
            const message = known ? (error as Error).message : `turnback: ${(error as Error).message}`;
            traceError(message);
            void this.showStartFailure(message);
            return;
        }
        const commandLine = [command.command, ...command.args].join(' ');
        traceInfo(`Starting the server (${command.source}): ${commandLine}`);
        const server = new ServerProcess(serverExecutable(command, folder?.uri.fsPath));
        let started = false;
        const clientOptions: LanguageClientOptions = {
            documentSelector: [{ scheme: 'file' }],
            outputChannel: this.options.outputChannel,
            traceOutputChannel: this.options.outputChannel,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: { turnback: getServerSettings() },
            synchronize: {
                // The server's own keys (not the whole "turnback" section, which holds client-only
                // keys the server would report as unknown).
                configurationSection: SERVER_SETTING_SECTIONS,
            },
            middleware: this.options.middleware,
            // Until it has started, a server that fails is reported once, below, rather than
            // restarted in a loop with the client's own generic messages.
            errorHandler: untilStarted(() => started, () => client),
        };
        const client = new LanguageClient(SERVER_ID, SERVER_NAME, server.start, clientOptions);
        this.client = client;
        this.clientDisposables.push(
            client.onNotification(Methods.didChange, (params: DidChangeParams) => this.changeEmitter.fire(params)),
            client.onDidChangeState((event) => {
                if (client !== this.client) {
                    return;
                }
                if (event.newState === State.Running) {
                    this.stateEmitter.fire(true);
                } else if (event.newState === State.Stopped) {
                    this.stateEmitter.fire(false);
                }
            }),
        );
        try {
            const answered = Promise.race([client.start(), server.exited]);
            await withTimeout(answered, START_TIMEOUT_MS, `it did not answer "initialize" within ${START_TIMEOUT_MS / 1000} s`);
            if (client.state !== State.Running || !client.initializeResult) {
                // The client's start can resolve after the connection closed during initialize.
                throw new Error('it stopped during initialize');
            }
            started = true;
            traceInfo(`Server started: ${client.initializeResult?.serverInfo?.name ?? ''} ${client.initializeResult?.serverInfo?.version ?? ''}`);
        } catch (error) {
            // A server that exits at once is named by how it ended and what it said last
            // (not by the pipe the client then could not write); one that hangs is killed.
            const ended = await server.ended(1000);
            server.kill();
            const said = server.lastError();
            traceError('The server did not start:', error);
            const why = ended ? `it exited (${ended})` : ((error as Error).message ?? String(error));
            void this.showStartFailure(
                `turnback: the server did not start (${commandLine}): ${why}` +
                    (said ? `; it said: ${said}` : '') +
                    '. ' +
                    START_ADVICE[command.source],
            );
            if (this.client === client) {
                this.client = undefined;
            }
            this.stateEmitter.fire(false);
        }
    }

    private async showStartFailure(message: string): Promise<void> {
        const choice = await showErrorMessage(message, 'Open Settings', 'Show Output');
        if (choice === 'Open Settings') {
            this.options.openSettings();
        } else if (choice === 'Show Output') {
            this.options.showOutput();
        }
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        this.clientDisposables.forEach((d) => d.dispose());
        this.clientDisposables = [];
        if (!client) {
            return;
        }
        try {
            if (client.state !== State.Stopped) {
                await client.stop(5000);
            }
        } catch (error) {
            traceError('Stopping the server:', error);
        }
        try {
            await client.dispose(2000);
        } catch {
            // already gone
        }
        this.stateEmitter.fire(false);
    }

    dispose(): void {
        void this.stop();
        this.stateEmitter.dispose();
        this.changeEmitter.dispose();
    }
}

/** What to do about a server that did not start, by where it came from. */
const START_ADVICE: Record<ServerCommand['source'], string> = {
    setting: 'Update the turnback that turnback.server.path names, or clear that setting.',
    PATH: 'Update or remove that turnback, or set turnback.server.path to the turnback executable.',
    python: 'Install turnback in that Python ("pip install turnback"), or set turnback.server.path to the turnback executable.',
    bundled: 'Restart the server to try again, or set turnback.server.path to a turnback executable.',
};

/** The client's default error handling once the server has started; before, a failure ends
 * the start without a restart or a message of the client's own (the extension says why). */
function untilStarted(started: () => boolean, client: () => LanguageClient): ErrorHandler {
    let defaults: ErrorHandler | undefined;
    const after = () => (defaults ??= client().createDefaultErrorHandler());
    return {
        error: (error, message, count) => (started() ? after().error(error, message, count) : { action: ErrorAction.Shutdown, handled: true }),
        closed: () => (started() ? after().closed() : { action: CloseAction.DoNotRestart, handled: true }),
    };
}
