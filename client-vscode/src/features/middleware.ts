// Language client middleware.
//
// Code lenses carry the server's commands (turnback.undo, .redo, .revertHunk, .showDiff,
// .capture). vscode-languageclient registers every command of the server's
// `executeCommandProvider` as a VS Code command that sends `workspace/executeCommand`, passing
// through `middleware.executeCommand`. Here undo and redo take the extension's path instead
// (conflict modal, summary, editors refreshed), showDiff opens the diff editor rather than
// returning data, and the others go to the server with their outcome shown.
//
// The settings section "turnback" also holds client-only keys (server.path, trace.server...),
// which the server would report as unknown: `workspace/configuration` answers carry only the
// server's keys.
import type { ConfigurationParams, Middleware } from 'vscode-languageclient';
import { SECTION } from '../common/constants';
import { DiffParams, RevertHunkResult, ServerCommands, Turn } from '../common/protocol';
import { pickServerSettings } from '../common/settings';
import { showInformationMessage, showWarningMessage } from '../common/vscodeapi';
import { reportError, restoreParams } from './commands';
import type { TurnbackContext } from './context';
import { showTurnDiff } from './diffView';
import { restore } from './restore';
import { turnTitle } from './turns';

export type ExecuteCommandNext = (command: string, args: unknown[]) => unknown;

export async function executeServerCommand(ctx: TurnbackContext, command: string, args: unknown[], next: ExecuteCommandNext): Promise<unknown> {
    const params = args?.[0];
    try {
        switch (command) {
            case ServerCommands.undo:
                return await restore(ctx, 'undo', restoreParams(ctx, params));
            case ServerCommands.redo:
                return await restore(ctx, 'redo', restoreParams(ctx, params));
            case ServerCommands.showDiff:
                await showTurnDiff(ctx, (typeof params === 'object' && params !== null ? params : {}) as DiffParams);
                return undefined;
            case ServerCommands.revertHunk: {
                const result = (await next(command, args)) as RevertHunkResult | undefined;
                if (result && !result.applied) {
                    void showWarningMessage(`turnback: ${result.message}`, {});
                }
                return result;
            }
            case ServerCommands.capture: {
                const turn = (await next(command, args)) as Turn | undefined;
                ctx.refresh();
                if (turn && typeof turn.turn === 'number') {
                    void showInformationMessage(`turnback: captured turn ${turn.turn} (${turnTitle(turn)}).`);
                }
                return turn;
            }
            default:
                return await next(command, args);
        }
    } catch (error) {
        await reportError(error);
        return undefined;
    }
}

/** Filters the answer to `workspace/configuration` for section "turnback". */
export function filterConfiguration(params: Pick<ConfigurationParams, 'items'>, result: unknown): unknown {
    if (!Array.isArray(result)) {
        return result;
    }
    return result.map((value, index) => (params.items[index]?.section === SECTION ? pickServerSettings(value) : value));
}

export function createMiddleware(ctx: TurnbackContext): Middleware {
    return {
        executeCommand: (command, args, next) => executeServerCommand(ctx, command, args, next),
        workspace: {
            configuration: async (params, token, next) => filterConfiguration(params, await next(params, token)) as unknown[],
        },
    };
}
