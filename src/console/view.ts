import { roleAllows, type Permission, type PublicUser, type WorkspaceView } from '../people/index.js';

/**
 * What /console renders for one person: who they are, their workspaces, the one shown (asked for
 * with ?w=, else the first), and what their role there lets the page offer. The offers come from
 * the one permission table; the API checks every request again, so they only spare a person
 * buttons that could only fail.
 */
export interface ConsoleView {
  user: PublicUser;
  workspaces: WorkspaceView[];
  current: WorkspaceView | undefined;
  /**
   * The names of the workspace's people, for a page whose section asks for them (names: the
   * ledger, whose records name people by id); empty otherwise.
   */
  people: Array<{ id: string; name: string }>;
  can: {
    readApprovals: boolean;
    decideApprovals: boolean;
    stopAll: boolean;
    readMembers: boolean;
    /** Stops agents and manages them: those that act for the person, or every one (manageAllAgents). */
    manageAgents: boolean;
    manageAllAgents: boolean;
  };
}

/** Whether the person's role in the workspace shown holds a permission (false without a workspace). */
export function viewAllows(view: Pick<ConsoleView, 'current'>, permission: Permission): boolean {
  return view.current !== undefined && roleAllows(view.current.role, permission);
}

export function consoleView(me: { user: PublicUser; workspaces: WorkspaceView[] }, requested?: string): ConsoleView {
  const current = me.workspaces.find((w) => w.id === requested) ?? me.workspaces[0];
  const allows = (permission: Permission) => viewAllows({ current }, permission);
  return {
    user: me.user,
    workspaces: me.workspaces,
    current,
    people: [],
    can: {
      readApprovals: allows('approvals.read'),
      decideApprovals: allows('approvals.decide'),
      stopAll: allows('workspace.stopAll'),
      readMembers: allows('members.manage'),
      manageAgents: allows('agents.manage'),
      manageAllAgents: allows('agents.readAll') && allows('members.manage'),
    },
  };
}
