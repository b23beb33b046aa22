export const EXTENSION_ID = 'turnback.turnback';
export const SERVER_ID = 'turnback';
export const SERVER_NAME = 'turnback';
/** The settings section, shared with the server (which reads `workspace/configuration` "turnback"). */
export const SECTION = 'turnback';
export const CONTENT_SCHEME = 'turnback';
export const TURNS_VIEW_ID = 'turnback.turns';

/** Commands this extension registers (the server registers turnback.undo etc. itself). */
export const Commands = {
    captureSnapshot: 'turnback.captureSnapshot',
    sealTurn: 'turnback.sealTurn',
    undoTurn: 'turnback.undoTurn',
    redoTurn: 'turnback.redoTurn',
    undoTurns: 'turnback.undoTurns',
    showTurns: 'turnback.showTurns',
    showTurnDiff: 'turnback.showTurnDiff',
    restartServer: 'turnback.restartServer',
    showOutput: 'turnback.showOutput',
    refreshTurns: 'turnback.refreshTurns',
    undoToHere: 'turnback.undoToHere',
    redoToHere: 'turnback.redoToHere',
    diffTurn: 'turnback.diffTurn',
    diffFile: 'turnback.diffFile',
    rescueVersion: 'turnback.rescueVersion',
} as const;

/** Context keys for `when` clauses. */
export const ContextKeys = {
    serverRunning: 'turnback.serverRunning',
    canUndo: 'turnback.canUndo',
    canRedo: 'turnback.canRedo',
} as const;
