"""A software team's issue tracker: projects with their label sets, team members, issues that move through a
status workflow, comments, and two-week sprints with a story-point capacity."""
from typing import Literal

from pydantic import Field

from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool

Status = Literal['backlog', 'todo', 'in_progress', 'in_review', 'done', 'wont_fix']
Priority = Literal['p0', 'p1', 'p2', 'p3']
Kind = Literal['bug', 'feature', 'chore']
TRANSITIONS = {'backlog': ('todo', 'wont_fix'), 'todo': ('backlog', 'in_progress', 'wont_fix'), 'in_progress': ('todo', 'in_review'),
               'in_review': ('in_progress', 'done'), 'done': ('todo',), 'wont_fix': ('backlog',)}
CLOSED = ('done', 'wont_fix')
NEEDS_NOTE = {('done', 'todo'), ('backlog', 'wont_fix'), ('todo', 'wont_fix'), ('wont_fix', 'backlog')}
POINTS = (1, 2, 3, 5, 8, 13)
MAX_IN_PROGRESS = 3
MAX_COMMENT = 2000


class Project(Row):
    name: str
    lead: str
    labels: list[str]
    archived: bool


class Member(Row):
    name: str
    email: str
    role: Literal['engineer', 'designer', 'qa', 'manager']
    projects: list[str]
    active: bool


class Sprint(Row):
    project_id: str
    name: str
    starts_on: str
    ends_on: str
    status: Literal['planned', 'active', 'closed']
    capacity_points: int = Field(ge=0)


class Issue(Row):
    project_id: str
    number: int = Field(ge=1)
    title: str
    description: str
    kind: Kind
    status: Status
    priority: Priority
    labels: list[str]
    assignee: str | None
    reporter: str
    sprint_id: str | None
    story_points: int | None
    created_at: str
    updated_at: str
    resolved_at: str | None


class Comment(Row):
    issue_key: str
    author: str
    body: str
    created_at: str


def _card(key: str, i: dict) -> dict:
    return {'issue_key': key, 'title': i['title'], 'kind': i['kind'], 'status': i['status'], 'priority': i['priority'],
            'assignee': i['assignee'], 'story_points': i['story_points'], 'sprint_id': i['sprint_id'], 'labels': list(i['labels'])}


class IssueTrackerTools(Toolkit):
    tables = {'projects': Project, 'members': Member, 'sprints': Sprint, 'issues': Issue, 'comments': Comment}

    def _project(self, project_key: str) -> dict:
        p = self.db.projects.get(project_key.upper())
        if p is None: raise ToolFailure(f'no project with key {project_key!r}; projects: {sorted(self.db.projects)}')
        return p

    def _issue(self, issue_key: str) -> dict:
        i = self.db.issues.get(issue_key.upper())
        if i is None: raise ToolFailure(f'no issue with key {issue_key!r}')
        return i

    def _sprint(self, sprint_id: str) -> dict: return self.row('sprints', sprint_id, 'sprint')

    def _team_member(self, handle: str, project_id: str) -> dict:
        m = self.db.members.get(handle)
        if m is None: raise ToolFailure(f'no member with handle {handle!r}')
        if not m['active']: raise ToolFailure(f'member {handle} is deactivated')
        if project_id not in m['projects']: raise ToolFailure(f'member {handle} is not on project {project_id}')
        return m

    def _writable(self, project_id: str) -> None:
        if self.db.projects[project_id]['archived']: raise ToolFailure(f'project {project_id} is archived and read-only')

    def _issues_in(self, sprint_id: str) -> list[tuple[str, dict]]:
        return sorted(((k, i) for k, i in self.db.issues.items() if i['sprint_id'] == sprint_id), key=lambda x: x[1]['number'])

    def _committed(self, sprint_id: str) -> int:
        return sum(i['story_points'] or 0 for _, i in self._issues_in(sprint_id) if i['status'] != 'wont_fix')

    def _stamp(self) -> str: return self.now().isoformat(timespec='minutes')

    def _add_comment(self, issue_key: str, author: str, body: str) -> str:
        n = max((int(k[1:]) for k in self.db.comments), default=0)
        cid = f'C{n + 1:05d}'
        self.db.comments[cid] = {'issue_key': issue_key, 'author': author, 'body': body, 'created_at': self._stamp()}
        return cid

    @read_tool
    def search_issues(self, project_key: str, status: Status | None = None, assignee: str | None = None, label: str | None = None,
                      text: str | None = None, limit: int = 20) -> list[dict]:
        """Find issues of a project, oldest first, optionally filtered.

        Args:
            project_key: the project's key, e.g. 'PAY'
            status: only issues in this status
            assignee: only issues assigned to this member handle, e.g. 'lena.quist'
            label: only issues carrying this label
            text: words that must all appear in the title (case-insensitive)
            limit: at most this many results
        """
        pid = project_key.upper(); self._project(pid)
        words = (text or '').lower().split()
        hits = []
        for k, i in sorted(self.db.issues.items(), key=lambda x: x[1]['number']):
            if i['project_id'] != pid or (status and i['status'] != status) or (assignee and i['assignee'] != assignee): continue
            if (label and label not in i['labels']) or not all(w in i['title'].lower() for w in words): continue
            hits.append(_card(k, i))
        return hits[:max(limit, 0)]

    @read_tool
    def get_issue_details(self, issue_key: str) -> dict:
        """Everything about one issue, with its comments in order and the statuses it can move to next.

        Args:
            issue_key: the issue's key, e.g. 'PAY-17'
        """
        key = issue_key.upper(); i = self._issue(key)
        comments = [{'comment_id': c, 'author': r['author'], 'body': r['body'], 'created_at': r['created_at']}
                    for c, r in sorted(self.db.comments.items()) if r['issue_key'] == key]
        return {'issue_key': key, **{f: (list(v) if isinstance(v, list) else v) for f, v in i.items()},
                'allowed_next_status': list(TRANSITIONS[i['status']]), 'comments': comments}

    @read_tool
    def get_sprint_board(self, project_key: str, sprint_id: str | None = None) -> dict:
        """A sprint's board: its issues grouped by status, committed story points against capacity, and the
        project's other sprints.

        Args:
            project_key: the project's key
            sprint_id: the sprint's id, e.g. 'SP012'; the project's active sprint if not given
        """
        pid = project_key.upper(); self._project(pid)
        sprints = sorted((k, s) for k, s in self.db.sprints.items() if s['project_id'] == pid)
        if sprint_id is None:
            sprint_id = next((k for k, s in sprints if s['status'] == 'active'), None)
            if sprint_id is None: raise ToolFailure(f'project {pid} has no active sprint')
        s = self._sprint(sprint_id)
        if s['project_id'] != pid: raise ToolFailure(f'sprint {sprint_id} belongs to project {s["project_id"]}, not {pid}')
        board = {st: [] for st in TRANSITIONS}
        for k, i in self._issues_in(sprint_id): board[i['status']].append(_card(k, i))
        committed = self._committed(sprint_id)
        return {'sprint_id': sprint_id, **s, 'committed_points': committed, 'remaining_capacity': s['capacity_points'] - committed,
                'board': board, 'project_sprints': [{'sprint_id': k, 'name': x['name'], 'status': x['status'], 'starts_on': x['starts_on']} for k, x in sprints]}

    @write_tool('issues')
    def file_issue(self, project_key: str, summary: str, kind: Kind, priority: Priority, reporter: str, description: str = '',
                   labels: list[str] | None = None) -> dict:
        """Open a new issue in a project's backlog, unassigned and unestimated. The reporter must be an active
        member of the project and every label must be one of the project's labels.

        Args:
            project_key: the project's key, e.g. 'AUTH'
            summary: the issue's one-line title, 5 to 120 characters
            kind: 'bug', 'feature' or 'chore'
            priority: 'p0' (drop everything) to 'p3' (nice to have)
            reporter: handle of the member filing the issue
            description: longer free-text description, steps to reproduce
            labels: labels to put on the issue, from the project's label set
        """
        pid = project_key.upper(); p = self._project(pid); self._writable(pid)
        self._team_member(reporter, pid)
        title = summary.strip()
        if not 5 <= len(title) <= 120: raise ToolFailure('summary must be 5 to 120 characters')
        labels = sorted(set(labels or []))
        bad = [l for l in labels if l not in p['labels']]
        if bad: raise ToolFailure(f"unknown labels {bad} for project {pid}; allowed: {p['labels']}")
        number = max((i['number'] for i in self.db.issues.values() if i['project_id'] == pid), default=0) + 1
        key, now = f'{pid}-{number}', self._stamp()
        self.db.issues[key] = {'project_id': pid, 'number': number, 'title': title, 'description': description, 'kind': kind,
                               'status': 'backlog', 'priority': priority, 'labels': labels, 'assignee': None, 'reporter': reporter,
                               'sprint_id': None, 'story_points': None, 'created_at': now, 'updated_at': now, 'resolved_at': None}
        return {'issue_key': key, 'status': 'backlog'}

    @write_tool('issues', 'comments')
    def move_issue_status(self, issue_key: str, new_status: Status, note: str | None = None) -> dict:
        """Move an issue along the workflow backlog -> todo -> in_progress -> in_review -> done (or back one step;
        backlog/todo -> wont_fix; done -> todo reopens; wont_fix -> backlog revives). Starting or reviewing work
        needs an assignee, and nobody may have more than 3 issues in progress. Closing as wont_fix, reopening and
        reviving need a note, which is posted as a comment by the assignee (or the reporter if unassigned).

        Args:
            issue_key: the issue's key
            new_status: the status to move to
            note: the reason for the move; required for wont_fix, reopen and revive, otherwise optional
        """
        key = issue_key.upper(); i = self._issue(key); self._writable(i['project_id'])
        old = i['status']
        if new_status not in TRANSITIONS[old]: raise ToolFailure(f'cannot move {key} from {old} to {new_status}; allowed: {list(TRANSITIONS[old])}')
        note = (note or '').strip()
        if (old, new_status) in NEEDS_NOTE and not note: raise ToolFailure(f'moving {key} from {old} to {new_status} needs a note giving the reason')
        if len(note) > MAX_COMMENT: raise ToolFailure(f'note is longer than {MAX_COMMENT} characters')
        if new_status in ('in_progress', 'in_review') and i['assignee'] is None: raise ToolFailure(f'{key} has no assignee; assign it first')
        if new_status == 'in_progress':
            wip = sum(1 for x in self.db.issues.values() if x['assignee'] == i['assignee'] and x['status'] == 'in_progress')
            if wip >= MAX_IN_PROGRESS: raise ToolFailure(f"{i['assignee']} already has {wip} issues in progress (limit {MAX_IN_PROGRESS})")
        i['status'], i['updated_at'] = new_status, self._stamp()
        i['resolved_at'] = i['updated_at'] if new_status in CLOSED else None
        out = {'issue_key': key, 'from': old, 'status': new_status}
        if note: out['comment_id'] = self._add_comment(key, i['assignee'] or i['reporter'], note)
        return out

    @write_tool('issues')
    def assign_issue_to(self, issue_key: str, assignee: str | None) -> dict:
        """Assign an open issue to an active member of its project, or unassign it (not while it is in progress
        or in review).

        Args:
            issue_key: the issue's key
            assignee: the new assignee's handle, or null to unassign
        """
        key = issue_key.upper(); i = self._issue(key); self._writable(i['project_id'])
        if i['status'] in CLOSED: raise ToolFailure(f"{key} is {i['status']}; reopen it before reassigning")
        if assignee is None and i['status'] in ('in_progress', 'in_review'): raise ToolFailure(f"{key} is {i['status']} and must keep an assignee")
        if assignee is not None: self._team_member(assignee, i['project_id'])
        if assignee == i['assignee']: raise ToolFailure(f'{key} is already assigned to {assignee}')
        previous = i['assignee']
        i['assignee'], i['updated_at'] = assignee, self._stamp()
        return {'issue_key': key, 'assignee': assignee, 'previous_assignee': previous}

    @write_tool('issues')
    def update_issue_fields(self, issue_key: str, priority: Priority | None = None, story_points: int | None = None,
                            add_labels: list[str] | None = None, remove_labels: list[str] | None = None) -> dict:
        """Change an open issue's priority, estimate or labels. Estimates are 1, 2, 3, 5, 8 or 13 points; a new
        estimate for an issue in a sprint must still fit the sprint's capacity.

        Args:
            issue_key: the issue's key
            priority: the new priority
            story_points: the new estimate in story points
            add_labels: labels to add, from the project's label set
            remove_labels: labels to remove
        """
        key = issue_key.upper(); i = self._issue(key); self._writable(i['project_id'])
        if i['status'] in CLOSED: raise ToolFailure(f"{key} is {i['status']}; closed issues cannot be edited")
        if priority is None and story_points is None and not add_labels and not remove_labels: raise ToolFailure('nothing to change')
        allowed = self.db.projects[i['project_id']]['labels']
        bad = [l for l in (add_labels or []) if l not in allowed]
        if bad: raise ToolFailure(f'unknown labels {bad} for project {i["project_id"]}; allowed: {allowed}')
        missing = [l for l in (remove_labels or []) if l not in i['labels']]
        if missing: raise ToolFailure(f'{key} does not carry labels {missing}')
        if story_points is not None:
            if story_points not in POINTS: raise ToolFailure(f'story points must be one of {list(POINTS)}')
            if i['sprint_id']:
                s = self.db.sprints[i['sprint_id']]
                total = self._committed(i['sprint_id']) - (i['story_points'] or 0) + story_points
                if s['status'] != 'closed' and total > s['capacity_points']:
                    raise ToolFailure(f"sprint {i['sprint_id']} would hold {total} points, over its capacity of {s['capacity_points']}")
            i['story_points'] = story_points
        if priority is not None: i['priority'] = priority
        i['labels'] = sorted((set(i['labels']) | set(add_labels or [])) - set(remove_labels or []))
        i['updated_at'] = self._stamp()
        return {'issue_key': key, 'priority': i['priority'], 'story_points': i['story_points'], 'labels': list(i['labels'])}

    @write_tool('issues')
    def plan_into_sprint(self, issue_key: str, sprint_id: str | None) -> dict:
        """Put an open, estimated issue into a planned or active sprint of its project, or take it out of its
        sprint (back to the backlog) with a null sprint_id. The sprint's committed points may not exceed its capacity.

        Args:
            issue_key: the issue's key
            sprint_id: the sprint's id, or null to remove the issue from its sprint
        """
        key = issue_key.upper(); i = self._issue(key); self._writable(i['project_id'])
        if i['status'] in CLOSED: raise ToolFailure(f"{key} is {i['status']}; only open issues can be planned")
        if sprint_id is None:
            if i['sprint_id'] is None: raise ToolFailure(f'{key} is not in a sprint')
        else:
            s = self._sprint(sprint_id)
            if s['project_id'] != i['project_id']: raise ToolFailure(f"sprint {sprint_id} belongs to project {s['project_id']}, not {i['project_id']}")
            if s['status'] == 'closed': raise ToolFailure(f'sprint {sprint_id} is closed')
            if i['sprint_id'] == sprint_id: raise ToolFailure(f'{key} is already in sprint {sprint_id}')
            if i['story_points'] is None: raise ToolFailure(f'{key} has no estimate; set story points first')
            total = self._committed(sprint_id) + i['story_points']
            if total > s['capacity_points']: raise ToolFailure(f"sprint {sprint_id} would hold {total} points, over its capacity of {s['capacity_points']}")
        previous = i['sprint_id']
        i['sprint_id'], i['updated_at'] = sprint_id, self._stamp()
        return {'issue_key': key, 'sprint_id': sprint_id, 'previous_sprint_id': previous}

    @write_tool('comments')
    def post_issue_comment(self, issue_key: str, author: str, body: str) -> dict:
        """Add a comment to an issue. The author must be an active member of the issue's project.

        Args:
            issue_key: the issue's key
            author: the commenting member's handle
            body: the comment text, 1 to 2000 characters
        """
        key = issue_key.upper(); i = self._issue(key); self._writable(i['project_id'])
        self._team_member(author, i['project_id'])
        body = body.strip()
        if not body or len(body) > MAX_COMMENT: raise ToolFailure(f'comment must be 1 to {MAX_COMMENT} characters')
        return {'comment_id': self._add_comment(key, author, body), 'issue_key': key}

    @write_tool('sprints', 'issues')
    def complete_sprint(self, sprint_id: str, next_sprint_id: str | None = None) -> dict:
        """Close a project's active sprint. Unfinished issues move into the next sprint, which must be a planned
        sprint of the same project and is started now (its capacity may be exceeded by the carry-over); without a
        next sprint they go back to the backlog.

        Args:
            sprint_id: the active sprint to close
            next_sprint_id: a planned sprint of the same project to start and carry unfinished issues into
        """
        s = self._sprint(sprint_id); self._writable(s['project_id'])
        if s['status'] != 'active': raise ToolFailure(f"sprint {sprint_id} is {s['status']}, not active")
        if next_sprint_id is not None:
            n = self._sprint(next_sprint_id)
            if n['project_id'] != s['project_id'] or n['status'] != 'planned':
                raise ToolFailure(f"sprint {next_sprint_id} is not a planned sprint of project {s['project_id']}")
        done, carried, now = 0, [], self._stamp()
        for k, i in self._issues_in(sprint_id):
            if i['status'] == 'done': done += i['story_points'] or 0
            elif i['status'] != 'wont_fix':
                i['sprint_id'], i['updated_at'] = next_sprint_id, now
                carried.append(k)
        s['status'] = 'closed'
        out = {'sprint_id': sprint_id, 'status': 'closed', 'completed_points': done, 'carried_over': carried}
        if next_sprint_id is not None:
            self.db.sprints[next_sprint_id]['status'] = 'active'
            out |= {'next_sprint_id': next_sprint_id, 'next_sprint_committed_points': self._committed(next_sprint_id)}
        return out
