//! Bookings paid by card: the card a reservation is paid with (`reservations.card_id`), what a
//! card payment's refunds go back to (`card_payments.refund_to`, fixed when it was paid) and the
//! Stripe charge behind it (`charge_id`, matched against Stripe's balance transactions), and
//! the refunds sent to cards (`card_refunds`): each is booked out of the wallet in the
//! transaction that refunded the booking, then sent to Stripe with an idempotency key from its
//! row.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Reservations {
    Table,
    CardId,
}

#[derive(DeriveIden)]
enum CardPayments {
    Table,
    Id,
    RefundTo,
    ChargeId,
    ReservationId,
}

#[derive(DeriveIden)]
enum CardRefunds {
    Table,
    Id,
    PaymentId,
    UserId,
    ReservationId,
    AmountMinor,
    RefundId,
    Status,
    Failure,
    LedgerTransactionId,
    CreatedAt,
    SettledAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(big_integer_null(Reservations::CardId))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(CardPayments::Table)
                    // `credits` or `card`.
                    .add_column(string_len(CardPayments::RefundTo, 8).default("credits"))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(CardPayments::Table)
                    .add_column(string_len_null(CardPayments::ChargeId, 255))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_card_payments_reservation")
                    .table(CardPayments::Table)
                    .col(CardPayments::ReservationId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(CardRefunds::Table)
                    .col(big_pk_auto(CardRefunds::Id))
                    .col(big_integer(CardRefunds::PaymentId))
                    .col(big_integer(CardRefunds::UserId))
                    .col(big_integer_null(CardRefunds::ReservationId))
                    .col(big_integer(CardRefunds::AmountMinor))
                    // Stripe's Refund, once it answered.
                    .col(string_len_null(CardRefunds::RefundId, 255).unique_key())
                    // `pending`, `succeeded`, `failed`.
                    .col(string_len(CardRefunds::Status, 16))
                    .col(text_null(CardRefunds::Failure))
                    // The deduction that took it out of the wallet.
                    .col(big_integer(CardRefunds::LedgerTransactionId).unique_key())
                    .col(timestamp_with_time_zone(CardRefunds::CreatedAt))
                    .col(timestamp_with_time_zone_null(CardRefunds::SettledAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_card_refunds_payment")
                            .from(CardRefunds::Table, CardRefunds::PaymentId)
                            .to(CardPayments::Table, CardPayments::Id),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_card_refunds_user")
                            .from(CardRefunds::Table, CardRefunds::UserId)
                            .to(Users::Table, Users::Id),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_card_refunds_payment")
                    .table(CardRefunds::Table)
                    .col(CardRefunds::PaymentId)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(CardRefunds::Table).to_owned())
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("idx_card_payments_reservation")
                    .table(CardPayments::Table)
                    .to_owned(),
            )
            .await?;
        for column in [CardPayments::ChargeId, CardPayments::RefundTo] {
            manager
                .alter_table(
                    Table::alter()
                        .table(CardPayments::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .drop_column(Reservations::CardId)
                    .to_owned(),
            )
            .await
    }
}
