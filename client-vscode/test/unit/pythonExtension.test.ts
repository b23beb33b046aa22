// The Python extension's selected interpreter: used when that extension is installed, never a
// hard dependency (absent, failing or slow, the server falls back to PATH).
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('./fakes/vscodeapi'));

import * as api from './fakes/vscodeapi';
import { PYTHON_EXTENSION_ID, selectedInterpreter } from '../../src/common/pythonExtension';

beforeEach(() => api.resetVscodeApi());

function pythonExtension(environments: unknown, isActive = true) {
    const exports = { environments };
    return { isActive, exports, activate: vi.fn(async () => exports) };
}

describe("the Python extension's interpreter", () => {
    it('the active environment, resolved to its executable (activating the extension first if needed)', async () => {
        const getActiveEnvironmentPath = vi.fn(() => ({ path: '/project/.venv' }));
        const resolveEnvironment = vi.fn(async () => ({ executable: { uri: { fsPath: '/project/.venv/bin/python' } } }));
        const extension = pythonExtension({ getActiveEnvironmentPath, resolveEnvironment }, false);
        api.getExtension.mockImplementation((id: string) => (id === PYTHON_EXTENSION_ID ? extension : undefined));
        expect(await selectedInterpreter()).toBe('/project/.venv/bin/python');
        expect(extension.activate).toHaveBeenCalled();
        expect(resolveEnvironment).toHaveBeenCalledWith({ path: '/project/.venv' });
    });

    it('not installed: undefined', async () => {
        expect(await selectedInterpreter()).toBeUndefined();
    });

    it('an API that throws or hangs: undefined, without waiting past the timeout', async () => {
        api.getExtension.mockReturnValue(pythonExtension({ getActiveEnvironmentPath: () => { throw new Error('boom'); }, resolveEnvironment: vi.fn() }));
        expect(await selectedInterpreter()).toBeUndefined();
        api.getExtension.mockReturnValue(pythonExtension({ getActiveEnvironmentPath: () => ({ path: '/x' }), resolveEnvironment: () => new Promise(() => undefined) }));
        const started = Date.now();
        expect(await selectedInterpreter(undefined, 50)).toBeUndefined();
        expect(Date.now() - started).toBeLessThan(2000);
    });

    it('an old Python extension without the environments API: undefined', async () => {
        api.getExtension.mockReturnValue({ isActive: true, exports: { settings: {} }, activate: vi.fn() });
        expect(await selectedInterpreter()).toBeUndefined();
    });
});
