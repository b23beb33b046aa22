// Logging to the "turnback" output channel (a LogOutputChannel, shared with the server's
// own output and the LSP trace). Before registration, logs go nowhere.
import * as util from 'util';
import type { Disposable, LogOutputChannel } from 'vscode';

let channel: LogOutputChannel | undefined;

export function registerLogger(output: LogOutputChannel): Disposable {
    channel = output;
    return {
        dispose: () => {
            channel = undefined;
        },
    };
}

function format(args: unknown[]): string {
    return args.map((a) => (typeof a === 'string' ? a : util.inspect(a, { depth: 4 }))).join(' ');
}

export function traceError(...args: unknown[]): void {
    channel?.error(format(args));
}

export function traceWarn(...args: unknown[]): void {
    channel?.warn(format(args));
}

export function traceInfo(...args: unknown[]): void {
    channel?.info(format(args));
}

export function traceLog(...args: unknown[]): void {
    channel?.appendLine(format(args));
}

export function traceVerbose(...args: unknown[]): void {
    channel?.debug(format(args));
}

export function showOutput(): void {
    channel?.show(true);
}
