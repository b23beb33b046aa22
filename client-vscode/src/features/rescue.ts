// "turnback: Put Back a Rescued Version…": what a forced undo or redo overwrote (or a crash
// recovery kept) is saved in the session; this picks one and puts its files back. Putting
// back is itself a restore whose overwritten files become a rescued version in turn.
import type { MessageItem, QuickPickItem } from 'vscode';
import { traceInfo } from '../common/logging';
import { describeKept, isConflict, RescuedVersion, RescueParams, RescueResult, Target } from '../common/protocol';
import { showInformationMessage, showQuickPick, showWarningMessage } from '../common/vscodeapi';
import { targetFromParams, TurnbackContext } from './context';
import { syncEditors } from './restore';
import { formatAge, plural } from './turns';

export const PUT_BACK_ANYWAY = 'Put back anyway';

const REASONS: Record<RescuedVersion['reason'], string> = {
    forcedUndo: 'overwritten by a forced undo',
    forcedRedo: 'overwritten by a forced redo',
    replacedByRescue: 'replaced by a put-back',
    recoveryKept: 'kept when a crashed restore was rolled back',
};

export interface RescuePickItem extends QuickPickItem {
    version: RescuedVersion;
}

function filesSummary(files: readonly string[]): string {
    if (!files.length) {
        return 'no files';
    }
    return files.length === 1 ? files[0] : `${files[0]} and ${plural(files.length - 1, 'more file')}`;
}

/** One item per rescued version, newest first: its files, why it was saved and when. */
export function rescuePickItems(versions: readonly RescuedVersion[], now: number = Date.now()): RescuePickItem[] {
    return versions.map((version) => ({
        label: `$(history) ${filesSummary(version.files)}`,
        description: [REASONS[version.reason] ?? version.reason, version.createdAt ? formatAge(version.createdAt, now) : '']
            .filter((part) => part)
            .join(' · '),
        detail: version.files.length > 1 ? version.files.join(', ') : undefined,
        version,
    }));
}

/** The modal for a put-back that would overwrite unsaved editor text: true to go ahead. */
async function confirmUnsaved(files: readonly string[]): Promise<boolean> {
    const anyway: MessageItem = { title: PUT_BACK_ANYWAY };
    const cancel: MessageItem = { title: 'Cancel', isCloseAffordance: true };
    const choice = await showWarningMessage(
        `Putting back would overwrite ${plural(files.length, 'file')} open with unsaved changes.`,
        { modal: true, detail: `${files.join('\n')}\n\nThe editors keep your unsaved text; what is on disk is rescued first.` },
        anyway,
        cancel,
    );
    return choice?.title === PUT_BACK_ANYWAY;
}

export async function rescueVersion(ctx: TurnbackContext, arg?: unknown): Promise<RescueResult | undefined> {
    const params = namedVersion(ctx, arg) ?? (await pickedVersion(ctx));
    if (!params) {
        return undefined;
    }
    let result: RescueResult;
    try {
        result = await ctx.api.rescue(params);
    } catch (error) {
        if (!isConflict(error)) {
            throw error;
        }
        if (!(await confirmUnsaved(error.data.files))) {
            traceInfo('rescue: cancelled by the user');
            return undefined;
        }
        result = await ctx.api.rescue({ ...params, force: true });
    }
    ctx.refresh();
    traceInfo(`rescue: ${result.message}`);
    const root = ctx.rootFor(params);
    if (root && result.files.length) {
        await syncEditors(root, result);
    }
    const kept = result.kept.length ? ` Left alone: ${result.kept.map(describeKept).join(', ')}.` : '';
    void showInformationMessage(`turnback: ${result.message}.${kept}`);
    return result;
}

/** The version a caller named (`{id, session?, workspace?}`: a forced restore's summary). */
function namedVersion(ctx: TurnbackContext, arg: unknown): RescueParams | undefined {
    const named = arg && typeof arg === 'object' ? (arg as Record<string, unknown>) : {};
    if (typeof named.id !== 'string' || !named.id) {
        return undefined;
    }
    const session = typeof named.session === 'string' ? { session: named.session } : {};
    return { ...targetFromParams(named, ctx.target()), ...session, id: named.id };
}

/** The version the user picks from the current session's. */
async function pickedVersion(ctx: TurnbackContext): Promise<RescueParams | undefined> {
    const target: Target = ctx.target();
    const list = await ctx.api.list({ ...target, limit: 1 });
    const versions = list.rescued ?? [];
    if (!versions.length) {
        void showInformationMessage(`turnback: no rescued versions in session "${list.session}". A forced undo or redo saves what it overwrites here.`);
        return undefined;
    }
    const picked = await showQuickPick(rescuePickItems(versions), {
        title: `turnback: rescued versions of session "${list.session}"`,
        placeHolder: 'Choose the version whose files to put back',
        matchOnDescription: true,
        matchOnDetail: true,
    });
    return picked ? { ...target, session: list.session, id: picked.version.id } : undefined;
}
