// The extension's settings: how to start the server (`turnback.server.*`, client only) and
// what the server reads itself (the keys of protocol.md's "Settings", under `turnback.`).
import * as os from 'os';
import * as path from 'path';
import type { ConfigurationChangeEvent, WorkspaceFolder } from 'vscode';
import { SECTION } from './constants';
import { getConfiguration, getWorkspaceFolders } from './vscodeapi';

export interface LaunchSettings {
    /** An explicit `turnback` executable; empty: look on PATH, then use Python. */
    path: string;
    /** The interpreter for `-m turnback`; empty: `python3` (`python` on Windows). */
    python: string;
    /** Extra arguments after `serve`, e.g. ["--log-file", "/tmp/turnback.log"]. */
    args: string[];
}

/** The settings the server itself understands; names as in protocol.md. */
export const SERVER_SETTING_KEYS = [
    'untrackedFileSizeLimit',
    'untrackedDirFileLimit',
    'excludedDirectories',
    'turnsPerSession',
    'codeLens',
    'snapshotFileLimit',
    'captureByteLimit',
    'turnQuietPeriod',
    'nestedRepositories',
    'repositoryLimit',
] as const;

export type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number];
export type ServerSettings = Partial<Record<ServerSettingKey, unknown>>;

/** `turnback.untrackedFileSizeLimit`, ...: what `synchronize.configurationSection` watches. */
export const SERVER_SETTING_SECTIONS: string[] = SERVER_SETTING_KEYS.map((key) => `${SECTION}.${key}`);

/** Only the server's keys: the server warns about any other key in its section. */
export function pickServerSettings(section: unknown): ServerSettings {
    const out: ServerSettings = {};
    if (typeof section !== 'object' || section === null) {
        return out;
    }
    for (const key of SERVER_SETTING_KEYS) {
        const value = (section as Record<string, unknown>)[key];
        if (value !== undefined && value !== null) {
            out[key] = value;
        }
    }
    return out;
}

export function getServerSettings(): ServerSettings {
    const config = getConfiguration(SECTION);
    const out: ServerSettings = {};
    for (const key of SERVER_SETTING_KEYS) {
        const value = config.get<unknown>(key);
        if (value !== undefined && value !== null) {
            out[key] = value;
        }
    }
    return out;
}

/** Expands `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`. */
export function resolveVariables(value: string, folder?: WorkspaceFolder, env: NodeJS.ProcessEnv = process.env): string {
    const home = os.homedir();
    const workspaceFolder = folder?.uri.fsPath ?? getWorkspaceFolders()[0]?.uri.fsPath;
    let out = value.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
        if (name === 'userHome') {
            return home;
        }
        if (name === 'workspaceFolder' && workspaceFolder) {
            return workspaceFolder;
        }
        if (name === 'workspaceFolderBasename' && workspaceFolder) {
            return path.basename(workspaceFolder);
        }
        if (name.startsWith('env:')) {
            return env[name.slice(4)] ?? '';
        }
        return whole;
    });
    if (out === '~' || out.startsWith('~/') || out.startsWith('~\\')) {
        out = path.join(home, out.slice(1));
    }
    return out;
}

export function getLaunchSettings(folder?: WorkspaceFolder): LaunchSettings {
    const config = getConfiguration(SECTION);
    const raw = (value: unknown) => (typeof value === 'string' ? value.trim() : '');
    const args = config.get<unknown>('server.args');
    return {
        path: raw(config.get('server.path')) ? resolveVariables(raw(config.get('server.path')), folder) : '',
        python: raw(config.get('server.python')) ? resolveVariables(raw(config.get('server.python')), folder) : '',
        args: Array.isArray(args) ? args.filter((a): a is string => typeof a === 'string').map((a) => resolveVariables(a, folder)) : [],
    };
}

/** A change that needs a new server process (not just new settings sent to it). */
export function needsRestart(event: ConfigurationChangeEvent): boolean {
    return event.affectsConfiguration(`${SECTION}.server`);
}
