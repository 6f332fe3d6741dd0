import { createBoard } from './board.js';
import { keepFresh } from './console-page.js';
import { body } from './helpers.js';
/**
 * The overview section (/console): the board (board.ts) of stop every agent, waiting approvals
 * and agents, kept fresh by keepFresh (console-page.ts).
 */
export function section_overview() {
  const board = createBoard({
    wid: body.dataset.workspace ?? '',
    me: body.dataset.user ?? '',
    canDecide: body.dataset.canDecide === 'true',
    canStopAll: body.dataset.canStopAll === 'true',
    canReadMembers: body.dataset.canReadMembers === 'true',
    canManage: body.dataset.canManageAgents === 'true',
    canManageAll: body.dataset.canManageAllAgents === 'true',
  });
  keepFresh(board.load, board.busy);
}
