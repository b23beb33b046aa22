import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { BundledServer, resolveServerCommand, ResolveDeps, serverExecutable, ServerNotFoundError, which } from '../../src/common/serverCommand';
import { getLaunchSettings, getServerSettings, needsRestart, pickServerSettings, resolveVariables, SERVER_SETTING_SECTIONS } from '../../src/common/settings';
import { canImportTurnback, Interpreter, NoPythonError, PythonCandidate } from '../../src/common/python';
import { findWorkTreeRoot } from '../../src/common/workTree';
import { isConflict } from '../../src/common/protocol';

beforeEach(() => api.resetVscodeApi());

function deps(fields: Partial<ResolveDeps> = {}): ResolveDeps {
    return {
        which: () => undefined,
        isFile: () => true,
        canImport: async () => ({ ok: false, detail: "No module named 'turnback'" }),
        findInterpreter: async () => {
            throw new NoPythonError(['python3 (PATH): not found']);
        },
        platform: 'linux',
        ...fields,
    };
}

describe('which server to start', () => {
    it('turnback.server.path first', async () => {
        const cmd = await resolveServerCommand({ path: '/opt/turnback', python: '', args: ['--log-file', 'x'] }, deps({ which: () => '/usr/bin/turnback' }));
        expect(cmd).toEqual({ command: '/opt/turnback', args: ['serve', '--log-file', 'x'], source: 'setting' });
    });

    it('a turnback.server.path that is not a file is an error naming the setting', async () => {
        await expect(resolveServerCommand({ path: '/nope', python: '', args: [] }, deps({ isFile: () => false }))).rejects.toThrow(/turnback.server.path/);
    });

    it('then turnback on PATH', async () => {
        const cmd = await resolveServerCommand({ path: '', python: '', args: [] }, deps({ which: (n) => (n === 'turnback' ? '/usr/bin/turnback' : undefined) }));
        expect(cmd).toEqual({ command: '/usr/bin/turnback', args: ['serve'], source: 'PATH' });
    });

    it('then <python> -m turnback, python3 by default', async () => {
        const canImport = vi.fn(async () => ({ ok: true }));
        const cmd = await resolveServerCommand({ path: '', python: '', args: [] }, deps({ canImport }));
        expect(cmd).toEqual({ command: 'python3', args: ['-m', 'turnback', 'serve'], source: 'python' });
        expect(canImport).toHaveBeenCalledWith('python3');
        const custom = await resolveServerCommand({ path: '', python: '/venv/bin/python', args: [] }, deps({ canImport }));
        expect(custom.command).toBe('/venv/bin/python');
        const windows = await resolveServerCommand({ path: '', python: '', args: [] }, deps({ canImport, platform: 'win32' }));
        expect(windows.command).toBe('python');
    });

    it('none works: an error that says how to fix it', async () => {
        const error = await resolveServerCommand({ path: '', python: '', args: [] }, deps()).catch((e) => e);
        expect(error).toBeInstanceOf(ServerNotFoundError);
        expect(error.message).toContain('pip install turnback');
        expect(error.message).toContain('turnback.server.path');
        expect(error.message).toContain("No module named 'turnback'");
    });

    const python312: Interpreter = { candidate: { command: 'python3', args: [], source: 'PATH' }, executable: '/usr/bin/python3.12', version: [3, 12, 1] };

    function bundle(selected?: string): BundledServer & { ensured: Interpreter[] } {
        const ensured: Interpreter[] = [];
        return {
            ensured,
            selectedInterpreter: async () => selected,
            ensure: async (base) => {
                ensured.push(base);
                return '/storage/server-env-0.1.0/bin/python';
            },
        };
    }

    it('with a bundled server and no turnback anywhere: the private environment, made from the first supported interpreter', async () => {
        const seen: PythonCandidate[][] = [];
        const bundled = bundle('/project/.venv/bin/python');
        const cmd = await resolveServerCommand(
            { path: '', python: '', args: ['--log-file', 'l'] },
            deps({ findInterpreter: async (c) => (seen.push(c), python312) }),
            bundled,
        );
        expect(cmd).toEqual({ command: '/storage/server-env-0.1.0/bin/python', args: ['-m', 'turnback', 'serve', '--log-file', 'l'], source: 'bundled' });
        expect(bundled.ensured).toEqual([python312]);
        // The Python extension's interpreter first, then PATH.
        expect(seen[0].map((c) => [c.command, c.source])).toEqual([
            ['/project/.venv/bin/python', 'Python extension'],
            ['python3', 'PATH'],
            ['python', 'PATH'],
        ]);
    });

    it('turnback.server.path and turnback on PATH still come before the bundled server', async () => {
        const bundled = bundle();
        expect((await resolveServerCommand({ path: '/opt/turnback', python: '', args: [] }, deps(), bundled)).source).toBe('setting');
        expect((await resolveServerCommand({ path: '', python: '', args: [] }, deps({ which: () => '/usr/bin/turnback' }), bundled)).source).toBe('PATH');
        expect(bundled.ensured).toEqual([]);
    });

    it('turnback.server.python with turnback runs it; without turnback it is the base of the private environment', async () => {
        const bundled = bundle('/ignored/by/the/setting');
        const withIt = await resolveServerCommand({ path: '', python: '/venv/bin/python', args: [] }, deps({ canImport: async () => ({ ok: true }) }), bundled);
        expect(withIt).toEqual({ command: '/venv/bin/python', args: ['-m', 'turnback', 'serve'], source: 'python' });
        const seen: PythonCandidate[][] = [];
        await resolveServerCommand({ path: '', python: '/venv/bin/python', args: [] }, deps({ findInterpreter: async (c) => (seen.push(c), python312) }), bundled);
        expect(seen[0][0]).toEqual({ command: '/venv/bin/python', args: [], source: 'turnback.server.python' });
        expect(seen[0].some((c) => c.source === 'Python extension')).toBe(false);
    });

    // A turnback.server.python that did not run was passed over for python3 without a word.
    it('a turnback.server.python that cannot run is an error naming the setting, not passed over', async () => {
        const bundled = bundle('/project/.venv/bin/python');
        const findInterpreter = vi.fn(async (candidates: PythonCandidate[]) => {
            throw new NoPythonError(candidates.map((c) => `${c.command} (${c.source}): not found`));
        });
        const error = await resolveServerCommand({ path: '', python: '/opt/nope/python3.12', args: [] }, deps({ findInterpreter }), bundled).catch((e) => e);
        expect(error).toBeInstanceOf(ServerNotFoundError);
        expect(error.message).toContain('turnback.server.python cannot run the server: /opt/nope/python3.12 (turnback.server.python): not found');
        expect(findInterpreter.mock.calls[0][0]).toHaveLength(1); // only the interpreter the user named
        expect(bundled.ensured).toEqual([]);
    });

    it('no supported Python: the NoPythonError that says what is needed', async () => {
        const error = await resolveServerCommand({ path: '', python: '', args: [] }, deps(), bundle()).catch((e) => e);
        expect(error).toBeInstanceOf(NoPythonError);
        expect(error.message).toMatch(/needs Python 3\.10 or newer/);
    });

    it('the executable has no transport, so the client adds no --stdio (turnback serve rejects it)', () => {
        const exe = serverExecutable({ command: 'python3', args: ['-m', 'turnback', 'serve'], source: 'python' }, '/ws', { A: '1' });
        expect(exe).toEqual({ command: 'python3', args: ['-m', 'turnback', 'serve'], options: { cwd: '/ws', env: { A: '1' } } });
        expect(exe).not.toHaveProperty('transport');
    });

    it('which() finds executables on PATH only', () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-which-'));
        fs.writeFileSync(path.join(dir, 'turnback'), '#!/bin/sh\n', { mode: 0o755 });
        fs.writeFileSync(path.join(dir, 'notexec'), '', { mode: 0o644 });
        expect(which('turnback', { PATH: dir }, 'linux')).toBe(path.join(dir, 'turnback'));
        expect(which('notexec', { PATH: dir }, 'linux')).toBeUndefined();
        expect(which('turnback', { PATH: '' }, 'linux')).toBeUndefined();
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it('canImportTurnback reports a missing interpreter without throwing', async () => {
        const result = await canImportTurnback('/definitely/not/python');
        expect(result.ok).toBe(false);
        expect(result.detail).toBeTruthy();
    });
});

describe('settings', () => {
    it('launch settings resolve variables', () => {
        api.state.config = { 'server.path': '${workspaceFolder}/bin/turnback', 'server.python': '~/venv/bin/python', 'server.args': ['--log-file', '${userHome}/t.log', 3] };
        const settings = getLaunchSettings();
        expect(settings.path).toBe(path.join('/ws', 'bin', 'turnback'));
        expect(settings.python).toBe(path.join(os.homedir(), 'venv/bin/python'));
        expect(settings.args).toEqual(['--log-file', `${os.homedir()}/t.log`]);
    });

    it('resolveVariables handles env and leaves unknown variables', () => {
        expect(resolveVariables('${env:TB_TEST}/x ${unknown}', undefined, { TB_TEST: '/e' })).toBe('/e/x ${unknown}');
    });

    it('server settings: only the keys of protocol.md', () => {
        api.state.config = { untrackedFileSizeLimit: 1024, codeLens: false, 'server.path': '/x' };
        expect(getServerSettings()).toEqual({ untrackedFileSizeLimit: 1024, codeLens: false });
        expect(pickServerSettings({ turnsPerSession: 3, server: {}, trace: {} })).toEqual({ turnsPerSession: 3 });
        expect(pickServerSettings(null)).toEqual({});
        // Every setting package.json contributes (generated from the server's own list by
        // scripts/settings_contract.py) except the client's turnback.server.* and trace.
        const contributed = Object.keys(
            JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')).contributes.configuration.properties,
        ).filter((key) => !key.startsWith('turnback.server.') && !key.startsWith('turnback.trace.'));
        expect(SERVER_SETTING_SECTIONS).toEqual(contributed);
    });

    it('only turnback.server.* changes restart the server', () => {
        const event = (changed: string) => ({ affectsConfiguration: (s: string) => changed.startsWith(s) });
        expect(needsRestart(event('turnback.server.path'))).toBe(true);
        expect(needsRestart(event('turnback.codeLens'))).toBe(false);
    });
});

describe('work tree roots and errors', () => {
    it('a folder inside a git work tree maps to the work tree root', () => {
        const exists = (p: string) => p === path.join('/repo', '.git');
        expect(findWorkTreeRoot('/repo/packages/a', exists)).toBe('/repo');
        expect(findWorkTreeRoot('/plain/folder', exists)).toBe('/plain/folder');
    });

    it('isConflict needs code -32803, reason conflict and files', () => {
        expect(isConflict({ code: -32803, message: 'm', data: { reason: 'conflict', files: ['a'] } })).toBe(true);
        expect(isConflict({ code: -32803, message: 'm', data: { reason: 'busy' } })).toBe(false);
        expect(isConflict({ code: -32602, message: 'm', data: { reason: 'conflict', files: [] } })).toBe(false);
        expect(isConflict(new Error('x'))).toBe(false);
    });
});
