// The server the extension brought: its wheel installed into a private environment keyed by the
// extension's version. The real python3 makes real virtual environments and pip installs a
// small stand-in wheel (no dependencies, so no package index is needed).
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { envDirFor, ensurePrivateEnv, MARKER, PrivateEnvError, removeOtherEnvs } from '../../src/common/privateEnv';
import { Interpreter, probeInterpreter, RunResult, Runner, runProcess } from '../../src/common/python';

let scratch: string;
let wheels: string;
let storage: string;

/** Writes turnback-<version>-py3-none-any.whl whose turnback module says `marker`. */
function makeWheel(dir: string, marker: string, version = '0.0.1'): string {
    fs.mkdirSync(dir, { recursive: true });
    const wheel = path.join(dir, `turnback-${version}-py3-none-any.whl`);
    const script = [
        'import sys, zipfile',
        'wheel, marker, version = sys.argv[1:4]',
        'info = f"turnback-{version}.dist-info"',
        'files = {"turnback/__init__.py": f"MARKER = {marker!r}\\n",',
        '  f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: turnback\\nVersion: {version}\\n",',
        '  f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}',
        'files[f"{info}/RECORD"] = "".join(f"{name},,\\n" for name in files) + f"{info}/RECORD,,\\n"',
        'with zipfile.ZipFile(wheel, "w") as z:',
        '    [z.writestr(name, text) for name, text in files.items()]',
    ].join('\n');
    execFileSync('python3', ['-c', script, wheel, marker, version]);
    return wheel;
}

async function python3(): Promise<Interpreter> {
    const probe = await probeInterpreter({ command: 'python3', args: [], source: 'PATH' });
    if (!probe.ok) {
        throw new Error(`these tests need python3: ${probe.why}`);
    }
    return probe.interpreter;
}

/** runProcess, recording each call. */
function recording(): Runner & { calls: string[][] } {
    const calls: string[][] = [];
    return Object.assign(
        (command: string, args: string[], timeoutMs: number) => {
            calls.push([command, ...args]);
            return runProcess(command, args, timeoutMs);
        },
        { calls },
    );
}

const importMarker = (python: string) => execFileSync(python, ['-c', 'import turnback; print(turnback.MARKER)'], { encoding: 'utf8' }).trim();

beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-env-test-'));
    wheels = path.join(scratch, 'wheels');
    storage = path.join(scratch, 'storage');
});
afterEach(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('the private environment (real python3, real venv and pip)', () => {
    it('first start creates it and installs the wheel; the next start reuses it without running anything', async () => {
        makeWheel(wheels, 'first');
        const base = await python3();
        const run = recording();
        const reports: string[] = [];
        const python = await ensurePrivateEnv(base, { storageDir: storage, version: '1.2.3', wheelsDir: wheels, run, report: (m) => reports.push(m) });
        expect(python).toBe(path.join(envDirFor(storage, '1.2.3'), 'bin', 'python'));
        expect(importMarker(python)).toBe('first');
        expect(run.calls.map((c) => c.slice(1, 3).join(' '))).toEqual(['-m venv', '-m pip', '-c import turnback']);
        expect(reports.length).toBe(2);
        const marker = JSON.parse(fs.readFileSync(path.join(envDirFor(storage, '1.2.3'), MARKER), 'utf8'));
        expect(marker).toMatchObject({ extensionVersion: '1.2.3', wheel: 'turnback-0.0.1-py3-none-any.whl', basePython: base.executable });
        // Nothing else is left in the storage folder (the temporary folder was renamed).
        expect(fs.readdirSync(storage)).toEqual(['server-env-1.2.3']);

        const again = recording();
        expect(await ensurePrivateEnv(base, { storageDir: storage, version: '1.2.3', wheelsDir: wheels, run: again })).toBe(python);
        expect(again.calls).toEqual([]);
    }, 120000);

    it('a rebuilt .vsix of the same version reinstalls; a new version makes a new environment and removes the old', async () => {
        makeWheel(wheels, 'before');
        const base = await python3();
        await ensurePrivateEnv(base, { storageDir: storage, version: '1.0.0', wheelsDir: wheels });
        makeWheel(wheels, 'after');
        expect(importMarker(await ensurePrivateEnv(base, { storageDir: storage, version: '1.0.0', wheelsDir: wheels }))).toBe('after');
        const newWheels = path.join(scratch, 'wheels-new');
        makeWheel(newWheels, 'new', '0.0.2');
        const python = await ensurePrivateEnv(base, { storageDir: storage, version: '1.1.0', wheelsDir: newWheels });
        expect(importMarker(python)).toBe('new');
        expect(fs.readdirSync(storage)).toEqual(['server-env-1.1.0']);
    }, 180000);
});

describe('the private environment: failures', () => {
    const base: Interpreter = { candidate: { command: 'python3', args: [], source: 'PATH' }, executable: '/usr/bin/python3', version: [3, 11, 2] };

    /** Creates the venv folder like python -m venv would, then fails the step named `failing`. */
    function failing(step: 'venv' | 'pip', stderr: string): Runner {
        return async (_command, args): Promise<RunResult> => {
            if (args[1] === 'venv') {
                fs.mkdirSync(path.join(args[2], 'bin'), { recursive: true });
                return step === 'venv' ? { code: 1, stdout: '', stderr } : { code: 0, stdout: '', stderr: '' };
            }
            return { code: 1, stdout: '', stderr };
        };
    }

    it('pip fails: an error that names the package index, and no half-made environment is left', async () => {
        makeWheel(wheels, 'x');
        const error = await ensurePrivateEnv(base, {
            storageDir: storage,
            version: '1.0.0',
            wheelsDir: wheels,
            run: failing('pip', 'ERROR: Could not find a version that satisfies the requirement pygit2>=1.15\n'),
        }).catch((e) => e);
        expect(error).toBeInstanceOf(PrivateEnvError);
        expect(error.message).toContain('package index');
        expect(error.message).toContain('pygit2>=1.15');
        expect(fs.readdirSync(storage)).toEqual([]);
    });

    it('a Python without venv support (Debian without python3-venv): says what to install', async () => {
        makeWheel(wheels, 'x');
        const error = await ensurePrivateEnv(base, {
            storageDir: storage,
            version: '1.0.0',
            wheelsDir: wheels,
            run: failing('venv', 'The virtual environment was not created successfully because ensurepip is not available.\n'),
        }).catch((e) => e);
        expect(error.message).toContain('python3-venv');
        expect(fs.readdirSync(storage)).toEqual([]);
    });

    it('a build without the bundled wheel: an error naming make vsix and turnback.server.path', async () => {
        const error = await ensurePrivateEnv(base, { storageDir: storage, version: '1.0.0', wheelsDir: wheels }).catch((e) => e);
        expect(error).toBeInstanceOf(PrivateEnvError);
        expect(error.message).toMatch(/make vsix.*turnback\.server\.path/);
    });

    it('cleanup keeps the current environment and another window\'s install in progress', () => {
        for (const name of ['server-env-2.0.0', 'server-env-1.0.0', 'server-env-2.0.0.tmp-1-1', 'server-env-2.0.0.tmp-2-2', 'other']) {
            fs.mkdirSync(path.join(storage, name), { recursive: true });
        }
        const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
        fs.utimesSync(path.join(storage, 'server-env-2.0.0.tmp-2-2'), old, old);
        removeOtherEnvs(storage, path.join(storage, 'server-env-2.0.0'));
        expect(fs.readdirSync(storage).sort()).toEqual(['other', 'server-env-2.0.0', 'server-env-2.0.0.tmp-1-1']);
    });
});
