// "turnback: Show Turns": the timeline as a quick pick; a chosen turn offers its diff and
// undo (or redo) to it.
import type { QuickPickItem } from 'vscode';
import type { ListResult, Target, Turn } from '../common/protocol';
import { showInformationMessage, showQuickPick } from '../common/vscodeapi';
import type { TurnbackContext } from './context';
import { showTurnDiff } from './diffView';
import { restore } from './restore';
import { filesChanged, formatAge, plural, redoCountTo, turnState, turnTitle, undoCountTo } from './turns';

export interface TurnPickItem extends QuickPickItem {
    turn: Turn;
}

export type TurnAction = 'diff' | 'undo' | 'redo';

export interface TurnActionItem extends QuickPickItem {
    action: TurnAction;
    count: number;
}

/** One item per turn, newest first: label, age, files changed, state. */
export function turnPickItems(list: ListResult, now: number = Date.now()): TurnPickItem[] {
    return list.turns.map((turn) => {
        const details = [filesChanged(turn), turnState(turn)].filter((part): part is string => !!part);
        return {
            label: `${turn.state === 'active' ? '$(history)' : '$(discard)'} ${turnTitle(turn)}`,
            description: `turn ${turn.turn} · ${formatAge(turn.createdAt, now)}`,
            detail: details.join(' · '),
            turn,
        };
    });
}

/** What can be done with a chosen turn; undo/redo counts make it the boundary. */
export function turnActionItems(list: ListResult, turn: Turn): TurnActionItem[] {
    const items: TurnActionItem[] = [{ label: '$(diff) Show Diff', description: 'what this turn changed', action: 'diff', count: 0 }];
    if (turn.state === 'active') {
        const count = undoCountTo(list.turns, turn);
        items.push({
            label: '$(discard) Undo To Here',
            description: `undoes ${plural(count, 'turn')}: this one${count > 1 ? ' and the newer ones' : ''}`,
            action: 'undo',
            count,
        });
    } else {
        const count = redoCountTo(list.turns, turn);
        items.push({
            label: '$(redo) Redo To Here',
            description: `redoes ${plural(count, 'turn')}: ${count > 1 ? 'the older undone ones and this one' : 'this one'}`,
            action: 'redo',
            count,
        });
    }
    return items;
}

export async function runTurnAction(ctx: TurnbackContext, target: Target, turn: Turn, item: TurnActionItem): Promise<void> {
    const where: Target = { ...target, session: turn.session };
    if (item.action === 'diff') {
        await showTurnDiff(ctx, { ...where, turn: turn.id });
    } else if (item.count > 0) {
        await restore(ctx, item.action, { ...where, turn: turn.id });
    }
}

export async function showTurns(ctx: TurnbackContext): Promise<void> {
    const target = ctx.target();
    const list = await ctx.api.list({ ...target, includeFiles: true });
    if (!list.turns.length) {
        void showInformationMessage('turnback: no turns yet. Capture a snapshot before an agent turn.');
        return;
    }
    const picked = await showQuickPick(turnPickItems(list), {
        title: `turnback: turns of session "${list.session}"`,
        placeHolder: 'Choose a turn to see its diff, or to undo or redo up to it',
        matchOnDescription: true,
        matchOnDetail: true,
    });
    if (!picked) {
        return;
    }
    const action = await showQuickPick(turnActionItems(list, picked.turn), {
        title: `turn ${picked.turn.turn}: ${turnTitle(picked.turn)}`,
    });
    if (!action) {
        return;
    }
    await runTurnAction(ctx, { ...target, session: list.session }, picked.turn, action);
}
