from finops.models import User


def user_set_role(*, user: User, role: str) -> None:
    """The role decides Django-admin access too: admins are staff and superusers, the others are neither."""
    user.role = role
    user.is_staff = user.is_superuser = role == User.Role.ADMIN
    user.save(update_fields=["role", "is_staff", "is_superuser"])
