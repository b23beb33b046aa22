// The Python interpreter for `python -m turnback serve`, and whether it has turnback.
import { execFile } from 'child_process';

export function defaultPython(platform: NodeJS.Platform = process.platform): string {
    return platform === 'win32' ? 'python' : 'python3';
}

export function pythonFor(setting: string, platform: NodeJS.Platform = process.platform): string {
    return setting || defaultPython(platform);
}

export interface ImportCheck {
    ok: boolean;
    /** Why not: the interpreter's stderr or the spawn error. */
    detail?: string;
}

/** Runs `python -c "import turnback"`; resolves (never rejects) with the outcome. */
export function canImportTurnback(python: string, timeoutMs = 20000): Promise<ImportCheck> {
    return new Promise((resolve) => {
        execFile(python, ['-c', 'import turnback'], { timeout: timeoutMs, windowsHide: true }, (error, _stdout, stderr) => {
            if (!error) {
                resolve({ ok: true });
                return;
            }
            const lastLine = String(stderr || '').trim().split(/\r?\n/).pop();
            resolve({ ok: false, detail: lastLine || error.message });
        });
    });
}
