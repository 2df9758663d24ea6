//! GPUs an agent reports for the first time wait as *pending* until a platform admin accepts
//! them (or their node accepts new GPUs by itself), so that a stolen node token cannot put fake
//! GPUs up for sale. Every GPU there is already is accepted; so are the demo fleet's.
//!
//! - `gpus.pending`: not bookable and left out of the inventory until accepted.
//! - `nodes.accept_new_gpus`: the node's new GPUs are accepted as they appear (`berth node add
//!   NAME --accept-new-gpus`, and the host `berth serve` itself reads through NVML).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Gpus {
    Table,
    Pending,
}

#[derive(DeriveIden)]
enum Nodes {
    Table,
    AcceptNewGpus,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // NOT NULL with a default: the rows there are now are accepted GPUs and nodes whose
        // new GPUs wait.
        manager
            .alter_table(
                Table::alter()
                    .table(Gpus::Table)
                    .add_column(
                        ColumnDef::new(Gpus::Pending)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Nodes::Table)
                    .add_column(
                        ColumnDef::new(Nodes::AcceptNewGpus)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Nodes::Table)
                    .drop_column(Nodes::AcceptNewGpus)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Gpus::Table)
                    .drop_column(Gpus::Pending)
                    .to_owned(),
            )
            .await
    }
}
