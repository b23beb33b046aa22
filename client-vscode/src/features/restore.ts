// Undo and redo with the conflict flow, then a summary and editors that show the new contents.
import * as fs from 'fs';
import type { MessageItem, TextDocument } from 'vscode';
import { traceInfo, traceWarn } from '../common/logging';
import { describeKept, isConflict, isTurnRunning, RestoreParams, RestoreResult, TurnRunningError } from '../common/protocol';
import {
    executeCommand,
    getActiveTextEditor,
    getTextDocuments,
    showInformationMessage,
    showWarningMessage,
} from '../common/vscodeapi';
import { absolutePath } from '../common/workTree';
import { targetFromParams, TurnbackContext } from './context';
import { plural } from './turns';

export type RestoreKind = 'undo' | 'redo';

export const OVERWRITE = 'Overwrite my changes';
export const CANCEL = 'Cancel';
export const UNDO_ANYWAY = 'Undo anyway';
export const REDO_ANYWAY = 'Redo anyway';

function verb(kind: RestoreKind): string {
    return kind === 'undo' ? 'Undo' : 'Redo';
}

/** The modal for `-32803` "conflict": true to retry with force. */
export async function confirmOverwrite(kind: RestoreKind, files: readonly string[]): Promise<boolean> {
    const shown = files.slice(0, 20).map((f) => `• ${f}`);
    if (files.length > shown.length) {
        shown.push(`… and ${files.length - shown.length} more`);
    }
    const detail =
        `${kind === 'undo' ? 'These files were changed after the turn' : 'These files were changed after the undo'}` +
        ` (on disk, or in an editor with unsaved changes):\n\n${shown.join('\n')}\n\n` +
        (kind === 'undo'
            ? 'Overwrite them? Redo brings the overwritten files back; unsaved editor text stays in its editor.'
            : 'Overwrite them? turnback saves the overwritten files in the session first; unsaved editor text stays in its editor.');
    const overwrite: MessageItem = { title: OVERWRITE };
    const cancel: MessageItem = { title: CANCEL, isCloseAffordance: true };
    const choice = await showWarningMessage(
        `${verb(kind)} would overwrite your changes to ${plural(files.length, 'file')}.`,
        { modal: true, detail },
        overwrite,
        cancel,
    );
    return choice?.title === OVERWRITE;
}

/** The modal for `-32803` "turnRunning": true to retry with force while the agent works. */
export async function confirmWhileRunning(kind: RestoreKind, error: TurnRunningError): Promise<boolean> {
    const anyway: MessageItem = { title: kind === 'undo' ? UNDO_ANYWAY : REDO_ANYWAY };
    const cancel: MessageItem = { title: CANCEL, isCloseAffordance: true };
    const { harness, harnessSession, turn } = error.data;
    const detail =
        `${error.message}\n\nThe agent may still write into the files ${kind === 'undo' ? 'undo restores' : 'redo brings back'}, ` +
        'so half of the turn could come back. Wait for the turn to end, or go ahead anyway.';
    const choice = await showWarningMessage(
        `Turn ${turn} is still running (${harness} session ${harnessSession}).`,
        { modal: true, detail },
        anyway,
        cancel,
    );
    return choice?.title === anyway.title;
}

/**
 * Runs `snapshot/undo` or `snapshot/redo`; while the turn's agent still runs, asks whether to
 * go ahead anyway (and retries with force); on a conflict asks, and retries with `force: true`
 * when the user chooses to overwrite. Resolves to undefined when the user cancelled.
 */
export async function restore(ctx: TurnbackContext, kind: RestoreKind, params: RestoreParams): Promise<RestoreResult | undefined> {
    const call = (p: RestoreParams) => (kind === 'undo' ? ctx.api.undo(p) : ctx.api.redo(p));
    let result: RestoreResult;
    try {
        result = await call(params);
    } catch (error) {
        if (isTurnRunning(error)) {
            traceInfo(`${kind}: refused, turn ${error.data.turn} is running`);
            if (!(await confirmWhileRunning(kind, error))) {
                traceInfo(`${kind}: cancelled by the user`);
                return undefined;
            }
            result = await call({ ...params, force: true });
            await afterRestore(ctx, kind, params, result);
            return result;
        }
        if (!isConflict(error)) {
            throw error;
        }
        traceInfo(`${kind}: conflict on ${error.data.files.join(', ')}`);
        if (!(await confirmOverwrite(kind, error.data.files))) {
            traceInfo(`${kind}: cancelled by the user`);
            return undefined;
        }
        result = await call({ ...params, force: true });
    }
    await afterRestore(ctx, kind, params, result);
    return result;
}

/** The summary and the editors, after a restore. */
export async function afterRestore(ctx: TurnbackContext, kind: RestoreKind, params: RestoreParams, result: RestoreResult): Promise<void> {
    ctx.refresh();
    const count = kind === 'undo' ? result.turnsUndone : result.turnsRedone;
    traceInfo(`${kind}: ${result.message}`);
    const root = ctx.rootFor(targetFromParams(params, ctx.target()));
    let unsaved: TextDocument[] = [];
    if (root && result.files.length) {
        unsaved = await syncEditors(root, result);
    }
    const notes = [result.message];
    if (result.kept.length) {
        notes.push(`Left alone: ${result.kept.map(describeKept).join(', ')}.`);
    }
    if (unsaved.length) {
        notes.push(`${plural(unsaved.length, 'editor')} with unsaved changes still show${unsaved.length === 1 ? 's' : ''} your text.`);
    }
    if (result.agentHint) {
        notes.push(result.agentHint.message); // the harness's own way back (Claude Code's /rewind)
    }
    const message = sentences(notes);
    const again = count ? (kind === 'undo' ? 'Redo' : 'Undo') : undefined;
    const rescued = result.rescued;
    const buttons = [again, rescued ? PUT_BACK_MINE : undefined].filter((b): b is string => b !== undefined);
    // Not awaited: a notification stays until dismissed, and the command is done.
    const shown = showInformationMessage(message, ...buttons);
    void Promise.resolve(shown).then(
        (choice) => {
            if (choice === again && count) {
                void executeCommand(kind === 'undo' ? 'turnback.redoTurn' : 'turnback.undoTurn', { ...targetFromParams(params, {}), count });
            } else if (choice === PUT_BACK_MINE && rescued) {
                const session = result.turns[0]?.session;
                void executeCommand('turnback.rescueVersion', { ...targetFromParams(params, {}), session, id: rescued.id });
            }
        },
        () => undefined,
    );
}

/** Notes joined as sentences: the server's message ends without a period. */
export function sentences(notes: string[]): string {
    return notes.map((n, i) => (i < notes.length - 1 && !/[.!?]$/.test(n) ? `${n}.` : n)).join(' ');
}

/** The button a forced restore's summary offers: its overwritten edits, put back. */
export const PUT_BACK_MINE = 'Put Back My Changes';

function readDisk(file: string): string | undefined {
    try {
        return fs.readFileSync(file, 'utf8');
    } catch {
        return undefined;
    }
}

/**
 * Makes open editors show what the restore wrote. VS Code's file watcher reloads documents
 * that have no unsaved changes by itself; this waits for that (up to `waitMs`), and reverts
 * the active editor if it is still stale and clean. `workbench.action.files.revert` acts on
 * the active editor only (it ignores a URI argument), so it is never used on other
 * documents: that could discard someone's unsaved text. Documents with unsaved changes are
 * left as they are and returned, so the summary can say so.
 */
export async function syncEditors(root: string, result: Pick<RestoreResult, 'files'>, waitMs = 1500): Promise<TextDocument[]> {
    const changed = new Set(result.files.filter((f) => f.action !== 'deleted').map((f) => absolutePath(root, f.path)));
    const open = () => getTextDocuments().filter((d) => d.uri.scheme === 'file' && changed.has(d.uri.fsPath) && !d.isClosed);
    const unsaved = open().filter((d) => d.isDirty);
    const stale = () => open().filter((d) => !d.isDirty && readDisk(d.uri.fsPath) !== undefined && d.getText() !== readDisk(d.uri.fsPath));
    const deadline = Date.now() + waitMs;
    let pending = stale();
    while (pending.length && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        pending = stale();
    }
    const active = getActiveTextEditor()?.document;
    for (const document of pending) {
        if (active && document === active && !document.isDirty) {
            await executeCommand('workbench.action.files.revert');
        } else {
            traceWarn(`${document.uri.fsPath} was changed on disk; its editor has not reloaded yet`);
        }
    }
    return unsaved;
}
