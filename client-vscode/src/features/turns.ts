// Pure helpers over timelines: counts for "undo to here", ages, labels.
import type { FileStatus, ListResult, Turn } from '../common/protocol';

/** Undo count that makes `target` undone: the active turns at or after it (undo takes newest first). */
export function undoCountTo(turns: readonly Turn[], target: Pick<Turn, 'turn'>): number {
    return turns.filter((t) => t.state === 'active' && t.turn >= target.turn).length;
}

/** Redo count that makes `target` active again: the undone turns at or before it (redo takes oldest first). */
export function redoCountTo(turns: readonly Turn[], target: Pick<Turn, 'turn'>): number {
    return turns.filter((t) => t.state === 'undone' && t.turn <= target.turn).length;
}

/** The newest active turn (turns come newest first, but do not rely on it). */
export function newestActive(turns: readonly Turn[]): Turn | undefined {
    return turns.filter((t) => t.state === 'active').sort((a, b) => b.turn - a.turn)[0];
}

export function activeCount(turns: readonly Turn[]): number {
    return turns.filter((t) => t.state === 'active').length;
}

export function undoneCount(turns: readonly Turn[]): number {
    return turns.filter((t) => t.state === 'undone').length;
}

/** "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago". */
export function formatAge(iso: string, now: number = Date.now()): string {
    const then = Date.parse(iso);
    if (Number.isNaN(then)) {
        return '';
    }
    const seconds = Math.max(0, Math.round((now - then) / 1000));
    if (seconds < 5) {
        return 'just now';
    }
    if (seconds < 60) {
        return `${seconds} s ago`;
    }
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) {
        return `${minutes} min ago`;
    }
    const hours = Math.floor(minutes / 60);
    if (hours < 48) {
        return `${hours} h ago`;
    }
    return `${Math.floor(hours / 24)} d ago`;
}

export function plural(count: number, one: string, many = `${one}s`): string {
    return `${count} ${count === 1 ? one : many}`;
}

/** "3 files changed", or undefined when the list was fetched without includeFiles. */
export function filesChanged(turn: Turn): string | undefined {
    return turn.files ? `${plural(turn.files.length, 'file')} changed` : undefined;
}

/** "Fix the parser" for a labelled turn; "Turn 3" otherwise (the server's default label). */
export function turnTitle(turn: Turn): string {
    return turn.label || `Turn ${turn.turn}`;
}

/** "active · finished", "active · running", "undone". */
export function turnState(turn: Turn): string {
    if (turn.state !== 'active') {
        return 'undone';
    }
    if (turn.progress === 'running' || turn.progress === 'interrupted') {
        return `active · ${turn.progress}`;
    }
    return turn.sealed ? 'active · finished' : 'active';
}

export const STATUS_LETTER: Record<FileStatus, string> = {
    added: 'A',
    modified: 'M',
    deleted: 'D',
    renamed: 'R',
};

export interface StatusSummary {
    text: string;
    tooltip: string;
}

/** The status bar's text: the newest active turn, and what undo/redo would do. */
export function statusSummary(list: ListResult | undefined): StatusSummary {
    if (!list) {
        return { text: '↶ turnback', tooltip: 'turnback: no timeline yet. Click to show turns.' };
    }
    const current = newestActive(list.turns);
    const redoable = undoneCount(list.turns);
    let text = current ? `↶ turn ${current.turn}` : list.turns.length ? '↶ all undone' : '↶ no turns';
    if (list.running) {
        text = `↶ turn ${list.running.turn} $(sync~spin) running`;
    } else if (list.runningElsewhere) {
        text += ' $(sync~spin)'; // another session's agent is at work: the tooltip says which
    }
    if (list.canRedo && redoable > 0) {
        text += ` ↷${redoable}`;
    }
    const lines = [`turnback — session "${list.session}"`];
    if (list.running) {
        const run = list.running;
        lines.push(
            `Turn ${run.turn} is running: ${run.harness} session ${run.harnessSession} changed the work tree ` +
                `${formatAge(run.lastChangeAt)}. Undo waits until it ends (or ${run.quietPeriod} s pass without a change).`,
        );
    }
    if (list.runningElsewhere) {
        const run = list.runningElsewhere;
        lines.push(
            `Turn ${run.turn} of session "${run.session ?? '?'}" is running in this work tree: ${run.harness} ` +
                `session ${run.harnessSession} changed it ${formatAge(run.lastChangeAt)}. Undo and redo here wait ` +
                `until it ends (or ${run.quietPeriod} s pass without a change).`,
        );
    }
    if (current) {
        lines.push(`Current turn: ${current.turn} (${turnTitle(current)}), ${formatAge(current.createdAt)}`);
    } else {
        lines.push(list.turns.length ? 'Every turn is undone.' : 'No turns captured yet.');
    }
    lines.push(list.canUndo ? `Undo: possible (${plural(activeCount(list.turns), 'active turn')})` : 'Undo: nothing to undo');
    lines.push(list.canRedo ? `Redo: possible (${plural(redoable, 'undone turn')})` : 'Redo: nothing to redo');
    lines.push('Click to show the turns.');
    return { text, tooltip: lines.join('\n') };
}
