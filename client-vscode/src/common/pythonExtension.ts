// The interpreter selected in the Python extension (ms-python.python), when it is installed: an
// optional dependency, used through its public API the way Microsoft's Python tool extensions
// do (environments.getActiveEnvironmentPath + resolveEnvironment). Never throws.
import type { Uri } from 'vscode';
import { traceVerbose, traceWarn } from './logging';
import { getExtension } from './vscodeapi';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** The part of the Python extension's API this uses. */
interface PythonExtensionApi {
    environments?: {
        getActiveEnvironmentPath(resource?: Uri): { path: string } | undefined;
        resolveEnvironment(env: { path: string } | string): Promise<{ executable?: { uri?: { fsPath: string } } } | undefined>;
    };
}

/** Activating the Python extension can be slow; the server does not wait longer than this. */
const TIMEOUT_MS = 15000;

export async function selectedInterpreter(resource?: Uri, timeoutMs = TIMEOUT_MS): Promise<string | undefined> {
    const extension = getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
    if (!extension) {
        return undefined;
    }
    const lookup = async (): Promise<string | undefined> => {
        const api = extension.isActive ? extension.exports : await extension.activate();
        const environments = api?.environments;
        const active = environments?.getActiveEnvironmentPath(resource);
        if (!environments || !active?.path) {
            return undefined;
        }
        const resolved = await environments.resolveEnvironment(active);
        return resolved?.executable?.uri?.fsPath;
    };
    try {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<undefined>((resolve) => {
            timer = setTimeout(() => resolve(undefined), timeoutMs);
        });
        const python = await Promise.race([lookup(), timeout]).finally(() => clearTimeout(timer));
        traceVerbose(`Python extension's interpreter: ${python ?? '(none)'}`);
        return python;
    } catch (error) {
        traceWarn("Could not ask the Python extension for its interpreter:", error);
        return undefined;
    }
}
