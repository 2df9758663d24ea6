//! Card payments through Stripe: each user's Stripe customer, the cards they saved (brand,
//! last four and expiry only; the number never reaches Berth), every payment Berth asked
//! Stripe for (a top-up, with its state and the ledger transaction that booked it), and the
//! ids of the webhook events already processed (a replayed event changes nothing).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum StripeCustomers {
    Table,
    UserId,
    CustomerId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PaymentCards {
    Table,
    Id,
    UserId,
    PaymentMethodId,
    Brand,
    Last4,
    ExpMonth,
    ExpYear,
    CreatedAt,
    RemovedAt,
}

#[derive(DeriveIden)]
enum CardPayments {
    Table,
    Id,
    UserId,
    Purpose,
    ReservationId,
    CardId,
    AmountMinor,
    Currency,
    IntentId,
    Status,
    Failure,
    LedgerTransactionId,
    CreatedAt,
    SettledAt,
}

#[derive(DeriveIden)]
enum StripeEvents {
    Table,
    Id,
    Kind,
    ReceivedAt,
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
            .create_table(
                Table::create()
                    .table(StripeCustomers::Table)
                    .col(big_integer(StripeCustomers::UserId).primary_key())
                    .col(string_len(StripeCustomers::CustomerId, 255).unique_key())
                    .col(timestamp_with_time_zone(StripeCustomers::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_stripe_customers_user")
                            .from(StripeCustomers::Table, StripeCustomers::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PaymentCards::Table)
                    .col(big_pk_auto(PaymentCards::Id))
                    .col(big_integer(PaymentCards::UserId))
                    .col(string_len(PaymentCards::PaymentMethodId, 255).unique_key())
                    .col(string_len(PaymentCards::Brand, 32))
                    .col(string_len(PaymentCards::Last4, 4))
                    .col(integer(PaymentCards::ExpMonth))
                    .col(integer(PaymentCards::ExpYear))
                    .col(timestamp_with_time_zone(PaymentCards::CreatedAt))
                    .col(timestamp_with_time_zone_null(PaymentCards::RemovedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_payment_cards_user")
                            .from(PaymentCards::Table, PaymentCards::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_payment_cards_user")
                    .table(PaymentCards::Table)
                    .col(PaymentCards::UserId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(CardPayments::Table)
                    .col(big_pk_auto(CardPayments::Id))
                    .col(big_integer(CardPayments::UserId))
                    // `top_up`.
                    .col(string_len(CardPayments::Purpose, 16))
                    .col(big_integer_null(CardPayments::ReservationId))
                    .col(big_integer(CardPayments::CardId))
                    .col(big_integer(CardPayments::AmountMinor))
                    .col(string_len(CardPayments::Currency, 3))
                    // Stripe's PaymentIntent, once it answered.
                    .col(string_len_null(CardPayments::IntentId, 255).unique_key())
                    // `pending`, `requires_action`, `succeeded`, `failed`.
                    .col(string_len(CardPayments::Status, 16))
                    .col(text_null(CardPayments::Failure))
                    // The grant that booked it: set once, when Stripe confirmed it.
                    .col(big_integer_null(CardPayments::LedgerTransactionId).unique_key())
                    .col(timestamp_with_time_zone(CardPayments::CreatedAt))
                    .col(timestamp_with_time_zone_null(CardPayments::SettledAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_card_payments_user")
                            .from(CardPayments::Table, CardPayments::UserId)
                            .to(Users::Table, Users::Id),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_card_payments_card")
                            .from(CardPayments::Table, CardPayments::CardId)
                            .to(PaymentCards::Table, PaymentCards::Id),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_card_payments_user")
                    .table(CardPayments::Table)
                    .col(CardPayments::UserId)
                    .col(CardPayments::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(StripeEvents::Table)
                    .col(string_len(StripeEvents::Id, 255).primary_key())
                    .col(string_len(StripeEvents::Kind, 64))
                    .col(timestamp_with_time_zone(StripeEvents::ReceivedAt))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            StripeEvents::Table.into_iden(),
            CardPayments::Table.into_iden(),
            PaymentCards::Table.into_iden(),
            StripeCustomers::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
