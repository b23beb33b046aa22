// The Python interpreter turnback runs with: which one to use (the way Python tools in VS Code
// pick one), whether it is recent enough, and whether it has turnback installed.
import { execFile } from 'child_process';

/** The oldest Python the server supports (pyproject.toml's requires-python). */
export const MIN_PYTHON: readonly [number, number] = [3, 10];

export function defaultPython(platform: NodeJS.Platform = process.platform): string {
    return platform === 'win32' ? 'python' : 'python3';
}

export function pythonFor(setting: string, platform: NodeJS.Platform = process.platform): string {
    return setting || defaultPython(platform);
}

/** A way to start an interpreter: `py -3` is the command `py` with the argument `-3`. */
export interface PythonCandidate {
    command: string;
    args: string[];
    /** Where it came from, for the log and the error message. */
    source: 'turnback.server.python' | 'Python extension' | 'PATH';
}

export function describeCandidate(candidate: PythonCandidate): string {
    return [candidate.command, ...candidate.args].join(' ');
}

/**
 * In order: turnback.server.python, the Python extension's selected interpreter, then what is on
 * PATH (`python3`, `python`; on Windows the launcher `py -3` first).
 */
export function interpreterCandidates(setting: string, selected: string | undefined, platform: NodeJS.Platform): PythonCandidate[] {
    const out: PythonCandidate[] = [];
    if (setting) {
        out.push({ command: setting, args: [], source: 'turnback.server.python' });
    }
    if (selected) {
        out.push({ command: selected, args: [], source: 'Python extension' });
    }
    const onPath =
        platform === 'win32'
            ? [{ command: 'py', args: ['-3'] }, { command: 'python', args: [] }, { command: 'python3', args: [] }]
            : [{ command: 'python3', args: [] }, { command: 'python', args: [] }];
    out.push(...onPath.map((c) => ({ ...c, source: 'PATH' as const })));
    return out;
}

export interface RunResult {
    /** The exit code; null when the process did not start or was killed. */
    code: number | null;
    stdout: string;
    stderr: string;
    /** Why it did not run (ENOENT, a timeout, ...). */
    error?: string;
}

export type Runner = (command: string, args: string[], timeoutMs: number) => Promise<RunResult>;

/** Runs a process to its end; resolves (never rejects) with what happened. */
export const runProcess: Runner = (command, args, timeoutMs) =>
    new Promise((resolve) => {
        execFile(command, args, { timeout: timeoutMs, windowsHide: true, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
            const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
            resolve({ code, stdout: String(stdout ?? ''), stderr: String(stderr ?? ''), error: error && code === null ? error.message : undefined });
        });
    });

export interface Interpreter {
    candidate: PythonCandidate;
    /** sys.executable: the absolute path, what the private environment is made from. */
    executable: string;
    version: [number, number, number];
}

const PROBE = 'import json, sys; print(json.dumps({"executable": sys.executable, "version": list(sys.version_info[:3])}))';

export type Probe = { ok: true; interpreter: Interpreter } | { ok: false; why: string };

/** Asks the interpreter for its path and version. */
export async function probeInterpreter(candidate: PythonCandidate, run: Runner = runProcess): Promise<Probe> {
    const result = await run(candidate.command, [...candidate.args, '-c', PROBE], 20000);
    if (result.code !== 0) {
        return { ok: false, why: result.error ?? lastLine(result.stderr) ?? `exit code ${result.code}` };
    }
    try {
        const info = JSON.parse(result.stdout.trim().split(/\r?\n/).pop() ?? '');
        const version = info.version as [number, number, number];
        if (typeof info.executable !== 'string' || !info.executable || !Array.isArray(version)) {
            throw new Error('no executable');
        }
        return { ok: true, interpreter: { candidate, executable: info.executable, version } };
    } catch {
        return { ok: false, why: `unexpected output: ${result.stdout.trim().slice(0, 200)}` };
    }
}

export function isSupported(version: readonly number[]): boolean {
    return version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]);
}

export class NoPythonError extends Error {
    constructor(readonly tried: string[]) {
        super(
            `turnback needs Python ${MIN_PYTHON.join('.')} or newer to run its server, and found none ` +
                `(tried: ${tried.join('; ')}). Install Python ${MIN_PYTHON.join('.')}+ (python.org, or your system's ` +
                'package manager), select it in the Python extension, or set turnback.server.python to its path.',
        );
        this.name = 'NoPythonError';
    }
}

/** The first candidate that runs and is recent enough; else a NoPythonError saying what was tried. */
export async function findInterpreter(candidates: PythonCandidate[], run: Runner = runProcess): Promise<Interpreter> {
    const tried: string[] = [];
    for (const candidate of candidates) {
        const probe = await probeInterpreter(candidate, run);
        if (!probe.ok) {
            tried.push(`${describeCandidate(candidate)} (${candidate.source}): ${probe.why}`);
        } else if (!isSupported(probe.interpreter.version)) {
            tried.push(`${describeCandidate(candidate)} (${candidate.source}): Python ${probe.interpreter.version.join('.')} is too old`);
        } else {
            return probe.interpreter;
        }
    }
    throw new NoPythonError(tried);
}

export function lastLine(text: string): string | undefined {
    return (
        text
            .trim()
            .split(/\r?\n/)
            .filter((l) => l.trim())
            .pop() || undefined
    );
}

export interface ImportCheck {
    ok: boolean;
    /** Why not: the interpreter's stderr or the spawn error. */
    detail?: string;
}

/** Runs `python -c "import turnback"`; resolves (never rejects) with the outcome. */
export async function canImportTurnback(python: string, timeoutMs = 20000, run: Runner = runProcess): Promise<ImportCheck> {
    const result = await run(python, ['-c', 'import turnback'], timeoutMs);
    if (result.code === 0) {
        return { ok: true };
    }
    return { ok: false, detail: lastLine(result.stderr) || result.error || `exit code ${result.code}` };
}
