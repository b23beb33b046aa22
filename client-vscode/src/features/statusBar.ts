// The status bar item: the current turn and whether undo/redo can do anything; a click
// shows the turns.
import { StatusBarAlignment, StatusBarItem } from 'vscode';
import { Commands, ContextKeys } from '../common/constants';
import { traceVerbose } from '../common/logging';
import type { ListResult } from '../common/protocol';
import { createStatusBarItem, executeCommand, getWorkspaceFolders } from '../common/vscodeapi';
import type { TurnbackContext } from './context';
import { statusSummary } from './turns';

/** While an agent turn runs, the timeline is asked again this often: a turn that ends by
 * going quiet (no hook ran) changes no timeline, so no `snapshot/didChange` says so. */
export const RUNNING_POLL_MS = 5000;

export class TurnStatusBar {
    readonly item: StatusBarItem;
    private generation = 0;
    private wasRunning = false;
    private poll: ReturnType<typeof setTimeout> | undefined;

    constructor(private readonly ctx: TurnbackContext) {
        this.item = createStatusBarItem('turnback.status', StatusBarAlignment.Left, 50);
        this.item.name = 'turnback';
        this.item.command = Commands.showTurns;
        this.item.text = '↶ turnback';
    }

    /** Asks the server for the timeline and shows it; never throws. */
    async update(): Promise<void> {
        const generation = ++this.generation;
        if (!getWorkspaceFolders().length) {
            this.item.hide();
            return;
        }
        let list: ListResult | undefined;
        let failure: string | undefined;
        if (!this.ctx.api.running) {
            failure = 'the turnback server is not running';
        } else {
            try {
                list = await this.ctx.api.list(this.ctx.target());
            } catch (error) {
                failure = (error as Error).message ?? String(error);
                traceVerbose('status bar: list failed:', error);
            }
        }
        if (generation !== this.generation) {
            return; // a newer update is on its way
        }
        if (failure !== undefined) {
            this.item.text = '↶ turnback $(warning)';
            this.item.tooltip = `turnback: ${failure}. Click to show turns.`;
        } else {
            const summary = statusSummary(list);
            this.item.text = summary.text;
            this.item.tooltip = summary.tooltip;
        }
        this.item.show();
        this.followRunning(!!list?.running || !!list?.runningElsewhere);
        await executeCommand('setContext', ContextKeys.canUndo, !!list?.canUndo);
        await executeCommand('setContext', ContextKeys.canRedo, !!list?.canRedo);
    }

    /** Polls while a turn runs; when it ends, every view of the timeline refreshes. */
    private followRunning(running: boolean): void {
        clearTimeout(this.poll);
        this.poll = running ? setTimeout(() => void this.update(), RUNNING_POLL_MS) : undefined;
        if (this.wasRunning && !running) {
            this.ctx.refresh();
        }
        this.wasRunning = running;
    }

    dispose(): void {
        clearTimeout(this.poll);
        this.item.dispose();
    }
}
