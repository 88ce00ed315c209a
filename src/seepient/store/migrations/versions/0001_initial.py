"""The first schema: tokens, sessions, turns, messages, events, pending approvals and grants."""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("principal", sa.String(200), nullable=False, index=True),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("revoked_at", _TS, nullable=True),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("principal", sa.String(200), nullable=False, index=True),
        sa.Column("workspace", sa.Text, nullable=False),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("mode", sa.String(40), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("last_seq", sa.BigInteger, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_table(
        "turns",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("sessions.id", ondelete="CASCADE"), index=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("reply", sa.Text, nullable=False),
        sa.Column("reason", sa.String(20), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("finished_at", _TS, nullable=True),
    )
    op.create_table(
        "messages",
        sa.Column(
            "session_id", sa.String(64), sa.ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("body", sa.JSON, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column(
            "session_id", sa.String(64), sa.ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("seq", sa.BigInteger, primary_key=True),
        sa.Column("type", sa.String(40), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_table(
        "pending_approvals",
        sa.Column("request_id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("sessions.id", ondelete="CASCADE")),
        sa.Column("body", sa.JSON, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("expires_at", _TS, nullable=False),
        sa.Column("answer", sa.JSON, nullable=True),
    )
    op.create_index("ix_pending_session_status", "pending_approvals", ["session_id", "status"])
    op.create_table(
        "grants",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("sessions.id", ondelete="CASCADE"), index=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )


def downgrade() -> None:
    for table in ("grants", "pending_approvals", "events", "messages", "turns", "sessions", "tokens"):
        op.drop_table(table)
