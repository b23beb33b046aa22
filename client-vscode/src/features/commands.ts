// The palette commands ("turnback: ...") and the Agent Turns view's commands.
import type { Disposable } from 'vscode';
import { Commands } from '../common/constants';
import { showOutput, traceError } from '../common/logging';
import { DiffParams, isRpcError, RestoreParams, RestoreResult, Target, Turn } from '../common/protocol';
import { executeCommand, registerCommand, showErrorMessage, showInformationMessage, showInputBox } from '../common/vscodeapi';
import { ServerNotRunningError } from './api';
import { targetFromParams, TurnbackContext } from './context';
import { showTurnDiff } from './diffView';
import { showTurns } from './quickPick';
import { rescueVersion } from './rescue';
import { restore } from './restore';
import { diffNode, redoToHere, undoToHere } from './treeView';
import { activeCount, plural, turnTitle } from './turns';

/** Shows a failure instead of letting VS Code print "command ... resulted in an error". */
export async function reportError(error: unknown): Promise<void> {
    traceError(error);
    if (error instanceof ServerNotRunningError) {
        const choice = await showErrorMessage('turnback: the server is not running.', 'Restart Server', 'Show Output');
        if (choice === 'Restart Server') {
            await executeCommand(Commands.restartServer);
        } else if (choice === 'Show Output') {
            showOutput();
        }
        return;
    }
    const message = isRpcError(error) || error instanceof Error ? error.message : String(error);
    if (isRpcError(error) && error.code === -32800) {
        return; // cancelled by the user
    }
    const choice = await showErrorMessage(`turnback: ${message}`, 'Show Output');
    if (choice === 'Show Output') {
        showOutput();
    }
}

export function guarded<A extends unknown[]>(fn: (...args: A) => Promise<unknown>): (...args: A) => Promise<void> {
    return async (...args: A) => {
        try {
            await fn(...args);
        } catch (error) {
            await reportError(error);
        }
    };
}

function asRecord(value: unknown): Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Restore params from a command argument ({count | turn, workspace, session, force}) or
 * nothing. A lens names its turn: sent as is, so that a turn captured since the lens was
 * drawn is not the one undone. */
export function restoreParams(ctx: TurnbackContext, arg: unknown): RestoreParams {
    const raw = asRecord(arg);
    const params: RestoreParams = targetFromParams(raw, ctx.target());
    if (typeof raw.turn === 'string' || typeof raw.turn === 'number') {
        params.turn = raw.turn;
    } else {
        params.count = typeof raw.count === 'number' && raw.count >= 1 ? Math.floor(raw.count) : 1;
    }
    if (raw.force === true) {
        params.force = true;
    }
    return params;
}

export function skippedNote(turn: Turn): string {
    if (!turn.skipped.length) {
        return '';
    }
    const shown = turn.skipped.slice(0, 3).map((s) => `${s.path} (${s.reason})`);
    const more = turn.skipped.length > 3 ? ` and ${turn.skipped.length - 3} more` : '';
    return ` Not snapshotted: ${shown.join(', ')}${more}.`;
}

export async function captureSnapshot(ctx: TurnbackContext, arg?: unknown): Promise<Turn | undefined> {
    const raw = asRecord(arg);
    let label = typeof raw.label === 'string' ? raw.label : undefined;
    if (label === undefined) {
        label = await showInputBox({
            title: 'turnback: Capture Snapshot',
            prompt: 'Snapshot the work tree before an agent turn. A label for the turn (empty: "Turn N"):',
            placeHolder: 'e.g. the request you are about to give the agent',
        });
        if (label === undefined) {
            return undefined; // escape
        }
    }
    const turn = await ctx.api.capture({ ...targetFromParams(raw, ctx.target()), label: label.trim() || undefined });
    ctx.refresh();
    void showInformationMessage(`turnback: captured turn ${turn.turn} (${turnTitle(turn)}).${skippedNote(turn)}`);
    return turn;
}

export async function sealTurn(ctx: TurnbackContext, arg?: unknown): Promise<Turn> {
    const turn = await ctx.api.capture({ ...targetFromParams(arg, ctx.target()), phase: 'after' });
    ctx.refresh();
    void showInformationMessage(`turnback: turn ${turn.turn} (${turnTitle(turn)}) is finished; later edits count as yours.`);
    return turn;
}

export function undoTurn(ctx: TurnbackContext, arg?: unknown): Promise<RestoreResult | undefined> {
    return restore(ctx, 'undo', restoreParams(ctx, arg));
}

export function redoTurn(ctx: TurnbackContext, arg?: unknown): Promise<RestoreResult | undefined> {
    return restore(ctx, 'redo', restoreParams(ctx, arg));
}

export function validateCount(value: string, max?: number): string | undefined {
    const text = value.trim();
    if (!/^\d+$/.test(text) || Number(text) < 1) {
        return 'A whole number of turns, 1 or more';
    }
    if (max !== undefined && Number(text) > max) {
        return `There ${max === 1 ? 'is' : 'are'} only ${plural(max, 'active turn')}`;
    }
    return undefined;
}

export async function undoTurns(ctx: TurnbackContext, arg?: unknown): Promise<RestoreResult | undefined> {
    const target: Target = targetFromParams(arg, ctx.target());
    const list = await ctx.api.list(target);
    const active = activeCount(list.turns);
    if (!active) {
        void showInformationMessage('turnback: Nothing to undo');
        return undefined;
    }
    const answer = await showInputBox({
        title: 'turnback: Undo Several Turns',
        prompt: `How many turns to undo, newest first? (${plural(active, 'active turn')})`,
        value: String(Math.min(2, active)),
        validateInput: (value) => validateCount(value, active),
    });
    if (answer === undefined || validateCount(answer, active)) {
        return undefined;
    }
    return restore(ctx, 'undo', { ...target, session: list.session, count: Number(answer.trim()) });
}

export interface CommandHooks {
    restartServer(): Promise<void>;
}

export function registerCommands(ctx: TurnbackContext, hooks: CommandHooks): Disposable[] {
    return [
        registerCommand(Commands.captureSnapshot, guarded((arg?: unknown) => captureSnapshot(ctx, arg))),
        registerCommand(Commands.sealTurn, guarded((arg?: unknown) => sealTurn(ctx, arg))),
        registerCommand(Commands.undoTurn, guarded((arg?: unknown) => undoTurn(ctx, arg))),
        registerCommand(Commands.redoTurn, guarded((arg?: unknown) => redoTurn(ctx, arg))),
        registerCommand(Commands.undoTurns, guarded((arg?: unknown) => undoTurns(ctx, arg))),
        registerCommand(Commands.showTurns, guarded(() => showTurns(ctx))),
        registerCommand(Commands.rescueVersion, guarded((arg?: unknown) => rescueVersion(ctx, arg))),
        registerCommand(
            Commands.showTurnDiff,
            guarded((arg?: unknown) => showTurnDiff(ctx, asRecord(arg) as DiffParams)),
        ),
        registerCommand(Commands.restartServer, guarded(() => hooks.restartServer())),
        registerCommand(Commands.showOutput, () => showOutput()),
        registerCommand(Commands.refreshTurns, () => ctx.refresh()),
        registerCommand(Commands.undoToHere, guarded((node: unknown) => undoToHere(ctx, node))),
        registerCommand(Commands.redoToHere, guarded((node: unknown) => redoToHere(ctx, node))),
        registerCommand(Commands.diffTurn, guarded((node: unknown) => diffNode(ctx, node))),
        registerCommand(Commands.diffFile, guarded((node: unknown) => diffNode(ctx, node))),
    ];
}
