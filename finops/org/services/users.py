"""Writes on users: their role and their team memberships. `apply_config` calls user_apply, the Django admin
user_admin_save / user_admin_delete; each change is audited once (no password, hash or session ever appears)."""

from django.db import transaction

from finops.models import AuditEntry, Membership, Team, User

from .audit import audit_record, audited_admin_delete, audited_admin_save, snapshot

SNAPSHOT_FIELDS = ("username", "email", "role", "is_active", "is_staff", "is_superuser", "time_zone")


def user_snapshot(user: User) -> dict:
    teams = sorted(f"{m.team.slug}:{m.role}" for m in user.memberships.select_related("team")) if user.pk else []
    return snapshot(user, SNAPSHOT_FIELDS, teams=teams)


def _audit(user: User, action: str, before: dict | None, by) -> None:
    audit_record(
        entity_type=AuditEntry.Entity.USER,
        action=action,
        label=user.get_username(),
        entity_id=user.pk,
        by=by,
        before=before,
        after=None if action == AuditEntry.Action.DELETED else user_snapshot(user),
    )


def _role(user: User, role: str) -> None:
    user.role = role
    user.is_staff = user.is_superuser = role == User.Role.ADMIN


@transaction.atomic
def user_set_role(*, user: User, role: str, by=None) -> None:
    """The role decides Django-admin access too: admins are staff and superusers, the others are neither."""
    before = user_snapshot(user)
    _role(user, role)
    user.save(update_fields=["role", "is_staff", "is_superuser"])
    _audit(user, AuditEntry.Action.UPDATED, before, by)


@transaction.atomic
def user_apply(
    *, username: str, email: str, time_zone: str, role: str, team: Team | None, team_role: str, by=None
) -> str:
    """`apply_config`'s upsert of one user: fields, role and (with `team`) the one membership the file says.
    A new user has no usable password (config holds none): they sign in after `changepassword` or a reset."""
    user = User.objects.filter(username=username).first()
    before = user_snapshot(user) if user else None
    if user is None:
        user = User(username=username, email=email, time_zone=time_zone)
        user.set_unusable_password()
        _role(user, role)
        user.save()
    else:
        user.email, user.time_zone = email, time_zone
        _role(user, role)
        if snapshot(user, SNAPSHOT_FIELDS) != {k: before[k] for k in SNAPSHOT_FIELDS}:
            user.save()
    if team is not None:
        memberships = list(user.memberships.all())
        if [(m.team_id, m.role) for m in memberships] != [(team.id, team_role)]:
            user.memberships.exclude(team=team).delete()
            Membership.objects.update_or_create(user=user, team=team, defaults={"role": team_role})
    if before is None:
        _audit(user, AuditEntry.Action.CREATED, None, by)
        return "created"
    entry_changed = user_snapshot(user) != before
    _audit(user, AuditEntry.Action.UPDATED, before, by)
    return "updated" if entry_changed else "unchanged"


@transaction.atomic
def user_admin_save(*, user: User, save, by=None) -> None:
    """The Django admin's save of `user` (`save()` writes the form, memberships included), audited once."""
    audited_admin_save(
        user, save=save, snapshot=user_snapshot, audit=lambda obj, action, before: _audit(obj, action, before, by)
    )


@transaction.atomic
def user_admin_delete(*, user: User, by=None) -> None:
    audited_admin_delete(
        user, snapshot=user_snapshot, audit=lambda obj, action, before: _audit(obj, action, before, by)
    )


@transaction.atomic
def user_memberships_change(*, users, change, by=None) -> None:
    """Team memberships changed from the Django admin (a team's inline, the Membership pages): `change()` makes the
    change; each user in `users` whose teams differ afterwards gets one entry."""
    before = {user.pk: (user, user_snapshot(user)) for user in users if user is not None and user.pk}
    change()
    for user, snapshot_before in before.values():
        _audit(user, AuditEntry.Action.UPDATED, snapshot_before, by)
