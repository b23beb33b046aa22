// The server's process as the extension starts it: spawned here rather than by
// vscode-languageclient, so that a start that never answers can be given up and killed, and
// a server that exits at once can be named with what it printed.
import { ChildProcess, spawn } from 'child_process';
import type { ServerExecutable } from './serverCommand';

/** How long a server may take to answer `initialize` before the start is given up. */
export const START_TIMEOUT_MS = 30_000;

/** The last bytes of the server's stderr kept for an error message. */
const STDERR_TAIL = 2000;

/** One spawned server: its process (once spawned) and the end of what it wrote to stderr. */
export class ServerProcess {
    child: ChildProcess | undefined;
    private stderr = '';
    private exitedWith!: (error: Error) => void;
    /** Rejects once the process has exited (a server that ends during its start). */
    readonly exited = new Promise<never>((_resolve, reject) => (this.exitedWith = reject));

    constructor(private readonly executable: ServerExecutable) {
        this.exited.catch(() => undefined); // only awaited while starting
    }

    /** vscode-languageclient's `ServerOptions`: spawns the server and hands its process over. */
    readonly start = (): Promise<ChildProcess> =>
        new Promise((resolve, reject) => {
            const { command, args, options } = this.executable;
            const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: 'pipe' });
            child.once('error', reject); // not found, not executable
            child.once('spawn', () => {
                this.child = child;
                child.stderr?.on('data', (data: Buffer | string) => {
                    this.stderr = (this.stderr + data.toString()).slice(-STDERR_TAIL);
                });
                child.once('close', () => this.exitedWith(new Error(`it exited (${this.exitStatus()})`)));
                resolve(child);
            });
        });

    /** The last line the server wrote to stderr, if any. */
    lastError(): string {
        const lines = this.stderr.split(/\r?\n/).filter((line) => line.trim() !== '');
        return lines.length ? lines[lines.length - 1].trim() : '';
    }

    /** How the process ended, if it did. */
    exitStatus(): string | undefined {
        const child = this.child;
        if (!child || (child.exitCode === null && child.signalCode === null)) {
            return undefined;
        }
        return child.exitCode !== null ? `exit code ${child.exitCode}` : `signal ${child.signalCode}`;
    }

    /** How the process ended, waiting up to `ms` for it to end (its stderr read to the end);
     * undefined if it is still running. */
    async ended(ms: number): Promise<string | undefined> {
        let timer: NodeJS.Timeout | undefined;
        const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
        await Promise.race([this.exited.catch(() => undefined), waited]);
        clearTimeout(timer);
        return this.exitStatus();
    }

    /** Kills a process that is still running (a start given up). */
    kill(): void {
        const child = this.child;
        if (child && child.exitCode === null && child.signalCode === null) {
            child.kill();
        }
    }
}

/** `promise`, or a rejection with `message` once `ms` have passed (the timer then cleared). */
export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
    });
    promise.catch(() => undefined); // a rejection after the timeout is nobody's to handle
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
