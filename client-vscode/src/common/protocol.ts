// The wire contract of `turnback serve` (see protocol.md at the repository root).
// Types only and constants: no VS Code import, so tests and the integration suite share it.

export const Methods = {
    capture: 'snapshot/capture',
    undo: 'snapshot/undo',
    redo: 'snapshot/redo',
    list: 'snapshot/list',
    diff: 'snapshot/diff',
    fileContent: 'snapshot/fileContent',
    prune: 'snapshot/prune',
    rescue: 'snapshot/rescue',
    didChange: 'snapshot/didChange',
} as const;

/** Commands the server lists in `executeCommandProvider`; code lenses carry them. */
export const ServerCommands = {
    undo: 'turnback.undo',
    redo: 'turnback.redo',
    revertHunk: 'turnback.revertHunk',
    showDiff: 'turnback.showDiff',
    capture: 'turnback.capture',
} as const;

export const ErrorCodes = {
    InvalidParams: -32602,
    RequestFailed: -32803,
    RequestCancelled: -32800,
    MethodNotFound: -32601,
    InternalError: -32603,
} as const;

/** Which work tree and session a request is about (both optional on the wire). */
export interface Target {
    /** File URI of a folder. */
    workspace?: string;
    session?: string;
}

export type TurnState = 'active' | 'undone';
/** Whether an agent may still be working on the turn (protocol.md "Turns in progress"). */
export type TurnProgress = 'running' | 'interrupted' | 'sealed' | 'open';
export type FileStatus = 'added' | 'modified' | 'deleted' | 'renamed';

export interface Skipped {
    path: string;
    reason: string;
    /** `blocked`, `sameFile`: the path in the way; `otherSession`: the session that changed it. */
    by?: string | null;
}

/** "path (reason)", or "path (reason: by)" where the server names who or what. */
export function describeKept(kept: Skipped): string {
    return kept.by ? `${kept.path} (${kept.reason}: ${kept.by})` : `${kept.path} (${kept.reason})`;
}

export interface TurnFile {
    path: string;
    oldPath: string | null;
    status: FileStatus;
}

export interface Turn {
    id: string;
    session: string;
    turn: number;
    label: string;
    createdAt: string;
    state: TurnState;
    sealed: boolean;
    sealedAt?: string;
    metadata: Record<string, unknown> | null;
    skipped: Skipped[];
    /** Sealed turns: what the "before" capture left out (`skipped` is the "after" one's). */
    skippedBefore?: Skipped[];
    /** Only with `snapshot/list` `includeFiles: true`. */
    files?: TurnFile[];
    /** Only in `snapshot/list` results. */
    progress?: TurnProgress;
}

/** `snapshot/list`'s `running` and `runningElsewhere`: a turn an agent is still working on. */
export interface RunningTurn {
    /** The session the turn belongs to (absent from older servers). */
    session?: string;
    turn: number;
    id: string;
    harness: string;
    harnessSession: string;
    lastChangeAt: string;
    secondsSinceChange: number;
    quietPeriod: number;
}

export interface SessionInfo {
    id: string;
    turns: number;
    updatedAt: string;
}

export interface ListParams extends Target {
    limit?: number;
    includeFiles?: boolean;
}

export interface ListResult {
    session: string;
    turns: Turn[];
    canUndo: boolean;
    canRedo: boolean;
    /** Absent from servers older than protocol.md "Turns in progress". */
    running?: RunningTurn | null;
    /** Another session's turn running in the same work tree: this session's undo and redo
     * wait for it (absent from older servers). */
    runningElsewhere?: RunningTurn | null;
    /** The session's rescued versions, newest first (absent from older servers). */
    rescued?: RescuedVersion[];
    sessions: SessionInfo[];
}

/** What a forced restore overwrote, kept in the session (protocol.md "RescuedVersion"). */
export interface RescuedVersion {
    id: string;
    createdAt: string;
    reason: 'forcedRedo' | 'forcedUndo' | 'replacedByRescue' | 'recoveryKept';
    files: string[];
}

export interface RescueParams extends Target {
    id: string;
    paths?: string[];
    force?: boolean;
    dryRun?: boolean;
}

export interface RescueResult {
    session: string;
    rescued: RescuedVersion;
    files: RestoredFile[];
    kept: Skipped[];
    replaced: RescuedVersion | null;
    message: string;
    dryRun: boolean;
}

export interface CaptureParams extends Target {
    label?: string;
    phase?: 'before' | 'after';
    metadata?: Record<string, unknown>;
    workDoneToken?: string | number;
}

export interface RestoreParams extends Target {
    count?: number;
    /** Undo down to (redo up to) this turn, by number or id: exact even if turns were added meanwhile. */
    turn?: number | string;
    force?: boolean;
    dryRun?: boolean;
}

export interface RestoredFile {
    path: string;
    action: 'modified' | 'created' | 'deleted';
}

export interface RestoreResult {
    turnsUndone?: number;
    turnsRedone?: number;
    turns: Turn[];
    files: RestoredFile[];
    kept: Skipped[];
    message: string;
    dryRun: boolean;
    headMoved?: { oldHead: string | null; newHead: string | null };
    /** A forced restore's overwritten edits, kept as this rescued version. */
    rescued?: RescuedVersion;
    /** Deleted files no snapshot held (too large, excluded): the message names them too. */
    notRestored?: Skipped[];
    /** Undo of an agent hook's turns: how to roll the harness's conversation back too. */
    agentHint?: { harness: string; prompt: string; message: string; sessionId?: string };
}

/** A turn by number or by id. */
export type TurnRef = number | string;

export interface DiffParams extends Target {
    turn?: TurnRef;
    path?: string;
    context?: number;
}

export interface Hunk {
    oldStart: number;
    oldLines: number;
    newStart: number;
    newLines: number;
}

export interface FileDiff {
    path: string;
    oldPath: string | null;
    status: FileStatus;
    binary: boolean;
    additions: number;
    deletions: number;
    hunks: Hunk[];
    diff: string;
    truncated?: true;
    /** Both sides' modes ("100644", "100755", "120000"), only where the turn changed it. */
    oldMode?: string;
    newMode?: string;
}

export interface DiffResult {
    turn: Turn;
    files: FileDiff[];
}

export type Side = 'before' | 'after';

export interface FileContentParams extends Target {
    turn: TurnRef;
    path: string;
    side?: Side;
}

export interface FileContentResult {
    path: string;
    side: Side;
    turn: string;
    exists: boolean;
    binary: boolean;
    text: string;
    size?: number;
    tooLarge?: boolean;
}

export interface PruneParams extends Target {
    keep?: number;
    olderThan?: string;
}

export interface PruneResult {
    removedTurns: { session: string; turn: number; id: string }[];
    removedSessions: string[];
    message: string;
}

export interface DidChangeParams {
    workspace: string;
    session: string;
}

export interface RevertHunkResult {
    applied: boolean;
    message: string;
}

/** What a JSON-RPC error looks like once vscode-jsonrpc has turned it into a ResponseError. */
export interface RpcErrorLike {
    code: number;
    message: string;
    data?: unknown;
}

export interface ConflictError extends RpcErrorLike {
    data: { reason: 'conflict'; files: string[] };
}

export function isRpcError(error: unknown): error is RpcErrorLike {
    return (
        typeof error === 'object' &&
        error !== null &&
        typeof (error as RpcErrorLike).code === 'number' &&
        typeof (error as RpcErrorLike).message === 'string'
    );
}

/** `-32803` with `data.reason: "conflict"`: undo/redo would overwrite the user's changes. */
export function isConflict(error: unknown): error is ConflictError {
    if (!isRpcError(error) || error.code !== ErrorCodes.RequestFailed) {
        return false;
    }
    const data = error.data as { reason?: unknown; files?: unknown } | undefined;
    return data?.reason === 'conflict' && Array.isArray(data.files);
}

export interface TurnRunningError extends RpcErrorLike {
    data: { reason: 'turnRunning'; turn: number; harness: string; harnessSession: string; secondsSinceChange: number };
}

/** `-32803` with `data.reason: "turnRunning"`: undo/redo would land in a running agent turn. */
export function isTurnRunning(error: unknown): error is TurnRunningError {
    if (!isRpcError(error) || error.code !== ErrorCodes.RequestFailed) {
        return false;
    }
    const data = error.data as { reason?: unknown } | undefined;
    return data?.reason === 'turnRunning';
}
