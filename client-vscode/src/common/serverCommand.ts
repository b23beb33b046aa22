// Which process to start for `turnback serve`: turnback.server.path, else `turnback` on PATH,
// else turnback.server.python if it has turnback, else the server the extension brought (its
// wheel, installed into a private environment); or a message that says how to fix it.
import * as fs from 'fs';
import * as path from 'path';
import { canImportTurnback, findInterpreter, ImportCheck, Interpreter, interpreterCandidates, MIN_PYTHON, NoPythonError, PythonCandidate, pythonFor } from './python';
import type { LaunchSettings } from './settings';

export interface ServerCommand {
    command: string;
    args: string[];
    /** Where it came from, for the log. */
    source: 'setting' | 'PATH' | 'python' | 'bundled';
}

/** The server the extension brought, when this build carries one (a .vsix from `make vsix`). */
export interface BundledServer {
    /** The Python extension's selected interpreter, if that extension is installed. */
    selectedInterpreter(): Promise<string | undefined>;
    /** The private environment's python for this interpreter; creates it on first use. */
    ensure(base: Interpreter): Promise<string>;
}

export class ServerNotFoundError extends Error {
    constructor(message: string) {
        super(message);
        this.name = 'ServerNotFoundError';
    }
}

export interface ResolveDeps {
    /** The absolute path of an executable found on PATH, if any. */
    which(name: string): string | undefined;
    isFile(file: string): boolean;
    canImport(python: string): Promise<ImportCheck>;
    /** The first supported interpreter among the candidates (throws NoPythonError). */
    findInterpreter(candidates: PythonCandidate[]): Promise<Interpreter>;
    platform: NodeJS.Platform;
}

export function which(name: string, env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string | undefined {
    const dirs = (env.PATH ?? env.Path ?? '').split(path.delimiter).filter(Boolean);
    const exts = platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').filter(Boolean) : [''];
    for (const dir of dirs) {
        for (const ext of exts) {
            const candidate = path.join(dir, name + ext);
            try {
                const stat = fs.statSync(candidate);
                if (stat.isFile()) {
                    if (platform !== 'win32') {
                        fs.accessSync(candidate, fs.constants.X_OK);
                    }
                    return candidate;
                }
            } catch {
                // not here
            }
        }
    }
    return undefined;
}

export const defaultDeps: ResolveDeps = {
    which: (name) => which(name),
    isFile: (file) => {
        try {
            return fs.statSync(file).isFile();
        } catch {
            return false;
        }
    },
    canImport: (python) => canImportTurnback(python),
    findInterpreter: (candidates) => findInterpreter(candidates),
    platform: process.platform,
};

export const INSTALL_HINT =
    'Install it with "pip install turnback" (into the Python that turnback.server.python names, or on your PATH), ' +
    'or set turnback.server.path to the turnback executable.';

export async function resolveServerCommand(
    settings: LaunchSettings,
    deps: ResolveDeps = defaultDeps,
    bundled?: BundledServer,
): Promise<ServerCommand> {
    const serveArgs = ['serve', ...settings.args];
    if (settings.path) {
        if (!deps.isFile(settings.path)) {
            throw new ServerNotFoundError(
                `turnback.server.path is "${settings.path}", which is not a file. Set it to the turnback executable, or clear it to use "turnback" from PATH.`,
            );
        }
        return { command: settings.path, args: serveArgs, source: 'setting' };
    }
    const onPath = deps.which('turnback');
    if (onPath) {
        return { command: onPath, args: serveArgs, source: 'PATH' };
    }
    if (bundled) {
        if (settings.python && (await deps.canImport(settings.python)).ok) {
            return { command: settings.python, args: ['-m', 'turnback', ...serveArgs], source: 'python' };
        }
        const selected = settings.python ? undefined : await bundled.selectedInterpreter();
        const candidates = interpreterCandidates(settings.python, selected, deps.platform);
        // An interpreter the user named is the one to use: one that does not run is said, not
        // passed over for another (the user would not know which one the server runs on).
        const base = await deps.findInterpreter(settings.python ? candidates.slice(0, 1) : candidates).catch((error: unknown) => {
            if (settings.python && error instanceof NoPythonError) {
                throw new ServerNotFoundError(
                    `turnback.server.python cannot run the server: ${error.tried.join('; ')}. ` +
                        `Set it to a Python ${MIN_PYTHON.join('.')} or newer, or clear it to let turnback find one.`,
                );
            }
            throw error;
        });
        const python = await bundled.ensure(base);
        return { command: python, args: ['-m', 'turnback', ...serveArgs], source: 'bundled' };
    }
    // A build without the bundled server (a development host): turnback from the interpreter.
    const python = pythonFor(settings.python, deps.platform);
    const check = await deps.canImport(python);
    if (check.ok) {
        return { command: python, args: ['-m', 'turnback', ...serveArgs], source: 'python' };
    }
    throw new ServerNotFoundError(
        `turnback: the turnback server was not found: no "turnback" on PATH, and "${python} -m turnback" failed` +
            (check.detail ? ` (${check.detail})` : '') +
            `. ${INSTALL_HINT}`,
    );
}

/**
 * What vscode-languageclient spawns (its `Executable`). No `transport`: with
 * `TransportKind.stdio` the client appends `--stdio` to the arguments, which `turnback serve`
 * rejects; without one it speaks over the process's stdin/stdout just the same.
 */
export interface ServerExecutable {
    command: string;
    args: string[];
    options: { cwd?: string; env: NodeJS.ProcessEnv };
}

export function serverExecutable(command: ServerCommand, cwd: string | undefined, env: NodeJS.ProcessEnv = process.env): ServerExecutable {
    return { command: command.command, args: [...command.args], options: { cwd, env: { ...env } } };
}
