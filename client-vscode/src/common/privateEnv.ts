// The server the extension brought: the turnback wheel in bundled/wheels/, installed once into a
// private virtual environment in the extension's global storage. One environment per extension
// version (an upgraded extension makes a new one, and removes the old ones); it is built in a
// temporary folder and renamed into place, so a half-made one is never used, and two windows
// starting at once do not trip over each other.
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { Interpreter, lastLine, Runner, runProcess } from './python';

export interface PrivateEnvOptions {
    /** The extension's global storage folder (context.globalStorageUri). */
    storageDir: string;
    /** The extension's version: the environment's key. */
    version: string;
    /** bundled/wheels inside the installed extension. */
    wheelsDir: string;
    platform?: NodeJS.Platform;
    run?: Runner;
    /** Progress messages ("creating a Python environment", ...). */
    report?(message: string): void;
}

/** What is written into a finished environment; an environment without it is not used. */
interface Marker {
    extensionVersion: string;
    wheel: string;
    wheelSha256: string;
    basePython: string;
    pythonVersion: string;
}

export const MARKER = 'turnback-env.json';
const ENV_PREFIX = 'server-env-';

export class PrivateEnvError extends Error {
    constructor(message: string) {
        super(message);
        this.name = 'PrivateEnvError';
    }
}

export function envDirFor(storageDir: string, version: string): string {
    return path.join(storageDir, `${ENV_PREFIX}${version}`);
}

export function envPython(dir: string, platform: NodeJS.Platform = process.platform): string {
    return platform === 'win32' ? path.join(dir, 'Scripts', 'python.exe') : path.join(dir, 'bin', 'python');
}

function turnbackWheels(wheelsDir: string): string[] {
    return fs.existsSync(wheelsDir) ? fs.readdirSync(wheelsDir).filter((f) => /^turnback-.*\.whl$/.test(f)) : [];
}

/** Whether this build carries the server (a development host without `make vsix` does not). */
export function hasBundledWheel(wheelsDir: string): boolean {
    return turnbackWheels(wheelsDir).length > 0;
}

/** The one turnback-*.whl the .vsix carries. */
export function bundledWheel(wheelsDir: string): string {
    const found = turnbackWheels(wheelsDir);
    if (found.length !== 1) {
        throw new PrivateEnvError(
            `turnback: this build of the extension carries no server (no turnback wheel in ${wheelsDir}). ` +
                'Install a .vsix built with "make vsix", or set turnback.server.path to a turnback executable.',
        );
    }
    return path.join(wheelsDir, found[0]);
}

function sha256(file: string): string {
    return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function readMarker(dir: string): Marker | undefined {
    try {
        return JSON.parse(fs.readFileSync(path.join(dir, MARKER), 'utf8')) as Marker;
    } catch {
        return undefined;
    }
}

/** A finished environment for this version and this very wheel (a rebuilt .vsix reinstalls). */
function isReady(dir: string, wheelSha: string, platform: NodeJS.Platform): boolean {
    const marker = readMarker(dir);
    return marker?.wheelSha256 === wheelSha && fs.existsSync(envPython(dir, platform));
}

/** The environment's python, ready to run `-m turnback serve`; creates the environment if needed. */
export async function ensurePrivateEnv(base: Interpreter, options: PrivateEnvOptions): Promise<string> {
    const platform = options.platform ?? process.platform;
    const run = options.run ?? runProcess;
    const report = options.report ?? (() => undefined);
    const wheel = bundledWheel(options.wheelsDir);
    const wheelSha = sha256(wheel);
    const dir = envDirFor(options.storageDir, options.version);
    if (isReady(dir, wheelSha, platform)) {
        return envPython(dir, platform);
    }
    fs.mkdirSync(options.storageDir, { recursive: true });
    const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
    try {
        report(`creating a Python ${base.version.join('.')} environment…`);
        await step(run, base.executable, ['-m', 'venv', tmp], 180000, venvHint);
        report('pip install turnback…');
        const python = envPython(tmp, platform);
        const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--find-links', options.wheelsDir, wheel];
        await step(run, python, pip, 900000, () =>
            'pip could not install turnback\'s dependencies (pygit2 and cffi come from your package index: is it reachable?)',
        );
        await step(run, python, ['-c', 'import turnback'], 60000, () => 'the installed server does not import');
        const marker: Marker = {
            extensionVersion: options.version,
            wheel: path.basename(wheel),
            wheelSha256: wheelSha,
            basePython: base.executable,
            pythonVersion: base.version.join('.'),
        };
        fs.writeFileSync(path.join(tmp, MARKER), JSON.stringify(marker, null, 2));
        if (isReady(dir, wheelSha, platform)) {
            // Another window finished first: use its environment.
            fs.rmSync(tmp, { recursive: true, force: true });
        } else {
            fs.rmSync(dir, { recursive: true, force: true });
            fs.renameSync(tmp, dir);
        }
    } catch (error) {
        fs.rmSync(tmp, { recursive: true, force: true });
        throw error;
    }
    removeOtherEnvs(options.storageDir, dir);
    return envPython(dir, platform);
}

async function step(run: Runner, command: string, args: string[], timeoutMs: number, why: (stderr: string) => string): Promise<void> {
    const result = await run(command, args, timeoutMs);
    if (result.code !== 0) {
        const detail = result.error ?? lastLine(result.stderr) ?? `exit code ${result.code}`;
        throw new PrivateEnvError(`turnback: setting up its server failed: ${why(result.stderr)}. "${[command, ...args].join(' ')}": ${detail}`);
    }
}

function venvHint(stderr: string): string {
    if (/ensurepip|python3-venv/.test(stderr)) {
        return 'this Python cannot create virtual environments (on Debian or Ubuntu: sudo apt install python3-venv)';
    }
    return 'could not create a virtual environment';
}

/** An install older than this that left its temporary folder behind was interrupted. */
const STALE_MS = 60 * 60 * 1000;

/**
 * Environments of other extension versions, and temporary folders of interrupted installs (not
 * fresh ones: another window may be installing right now).
 */
export function removeOtherEnvs(storageDir: string, keep: string, now = Date.now()): void {
    for (const name of fs.readdirSync(storageDir)) {
        const full = path.join(storageDir, name);
        if (!name.startsWith(ENV_PREFIX) || full === keep) {
            continue;
        }
        try {
            if (name.includes('.tmp-') && now - fs.statSync(full).mtimeMs < STALE_MS) {
                continue;
            }
            fs.rmSync(full, { recursive: true, force: true });
        } catch {
            // in use or already gone: the next upgrade tries again
        }
    }
}
