"""Control-plane replicas on one database: each replica's heartbeat, which replica runs a session's turn,
and an interrupt another replica asked for."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "replicas",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("owner", sa.String(64), nullable=True))
        batch.add_column(
            sa.Column("interrupt_requested", sa.Boolean, nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("interrupt_requested")
        batch.drop_column("owner")
    op.drop_table("replicas")
