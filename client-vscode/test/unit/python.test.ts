// Choosing the interpreter for the server: candidates in the order Python tools use, and the
// first one that runs and is Python >= 3.10.
import { describe, expect, it } from 'vitest';
import {
    findInterpreter,
    interpreterCandidates,
    isSupported,
    NoPythonError,
    probeInterpreter,
    RunResult,
    Runner,
} from '../../src/common/python';

/** A runner that answers the version probe from a table: command -> version, or missing. */
function fakeRunner(table: Record<string, [number, number, number] | 'broken'>): Runner & { calls: string[][] } {
    const calls: string[][] = [];
    const run = async (command: string, args: string[]): Promise<RunResult> => {
        calls.push([command, ...args]);
        const entry = table[[command, ...args.filter((a) => a === '-3')].join(' ')];
        if (entry === undefined) {
            return { code: null, stdout: '', stderr: '', error: `spawn ${command} ENOENT` };
        }
        if (entry === 'broken') {
            return { code: 1, stdout: '', stderr: 'Traceback\nImportError: no json\n' };
        }
        return { code: 0, stdout: JSON.stringify({ executable: `/abs/${command}`, version: entry }) + '\n', stderr: '' };
    };
    return Object.assign(run, { calls });
}

describe('interpreter candidates', () => {
    it('the setting, then the Python extension, then python3 and python on PATH', () => {
        expect(interpreterCandidates('/my/python', '/sel/python', 'linux')).toEqual([
            { command: '/my/python', args: [], source: 'turnback.server.python' },
            { command: '/sel/python', args: [], source: 'Python extension' },
            { command: 'python3', args: [], source: 'PATH' },
            { command: 'python', args: [], source: 'PATH' },
        ]);
    });

    it('on Windows the py launcher (py -3) comes first', () => {
        expect(interpreterCandidates('', undefined, 'win32').map((c) => [c.command, ...c.args].join(' '))).toEqual(['py -3', 'python', 'python3']);
    });
});

describe('finding a supported interpreter', () => {
    it('skips a missing, a broken and a too old interpreter, and says why for each', async () => {
        const run = fakeRunner({ '/sel/python': 'broken', python3: [3, 9, 18], python: [3, 12, 3] });
        const found = await findInterpreter(interpreterCandidates('', '/sel/python', 'linux'), run);
        expect(found.executable).toBe('/abs/python');
        expect(found.version).toEqual([3, 12, 3]);
        expect(found.candidate.source).toBe('PATH');
    });

    it('none: a NoPythonError naming each candidate and what is needed', async () => {
        const run = fakeRunner({ python3: [3, 8, 10] });
        const error = await findInterpreter(interpreterCandidates('/nope/python', undefined, 'linux'), run).catch((e) => e);
        expect(error).toBeInstanceOf(NoPythonError);
        expect(error.message).toContain('Python 3.10 or newer');
        expect(error.message).toContain('/nope/python (turnback.server.python): spawn /nope/python ENOENT');
        expect(error.message).toContain('python3 (PATH): Python 3.8.10 is too old');
        expect(error.message).toContain('turnback.server.python');
    });

    it('py -3 is run with its argument before -c', async () => {
        const run = fakeRunner({ 'py -3': [3, 11, 0] });
        const found = await findInterpreter(interpreterCandidates('', undefined, 'win32'), run);
        expect(found.executable).toBe('/abs/py');
        expect(run.calls[0].slice(0, 3)).toEqual(['py', '-3', '-c']);
    });

    it('version bounds: 3.10 is the oldest supported', () => {
        expect(isSupported([3, 10, 0])).toBe(true);
        expect(isSupported([3, 9, 99])).toBe(false);
        expect(isSupported([4, 0, 0])).toBe(true);
    });

    it('really running candidates that do not exist: a NoPythonError naming each, not a crash', async () => {
        const error = await findInterpreter([
            { command: '/nonexistent/python3', args: [], source: 'turnback.server.python' },
            { command: 'turnback-no-such-python', args: [], source: 'PATH' },
        ]).catch((e) => e);
        expect(error).toBeInstanceOf(NoPythonError);
        expect(error.tried).toHaveLength(2);
        expect(error.message).toMatch(/\/nonexistent\/python3 \(turnback\.server\.python\): .*ENOENT/);
        expect(error.message).toMatch(/turnback-no-such-python \(PATH\): .*ENOENT/);
    });

    it('the real python3 on this machine probes to an absolute path and its version', async () => {
        const probe = await probeInterpreter({ command: 'python3', args: [], source: 'PATH' });
        expect(probe.ok).toBe(true);
        if (probe.ok) {
            expect(probe.interpreter.executable).toMatch(/^\//);
            expect(probe.interpreter.version[0]).toBe(3);
        }
    });
});
