/**
 * The overview section (/console): the board (board.ts) of stop every agent, waiting approvals
 * and agents, kept fresh by keepFresh (console-page.ts).
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const SECTION_OVERVIEW = String.raw`
  function section_overview() {
    var board = createBoard({
      wid: body.dataset.workspace,
      me: body.dataset.user,
      canDecide: body.dataset.canDecide === 'true',
      canStopAll: body.dataset.canStopAll === 'true',
      canReadMembers: body.dataset.canReadMembers === 'true',
    });
    keepFresh(board.load, board.busy);
  }

`;
