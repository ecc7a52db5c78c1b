# sluice on Cloud Run with Cloud SQL for PostgreSQL.
#
# The service reaches the database through Cloud Run's built-in Cloud SQL
# connection (the Cloud SQL Auth Proxy's unix socket under /cloudsql), not
# private IP: no VPC, connector or Direct VPC egress to create or pay for
# while idle, the proxy encrypts and authorises by IAM (roles/cloudsql.client
# on this instance only), and the instance's public IP accepts no network
# (no authorised networks, connector enforcement on). The database part is
# gcp-cloudsql-store, shared with the Cloud Function variant.

locals {
  secret_store = "${var.name}-store"
  secret_keys  = "${var.name}-access-keys"
  secret_token = "${var.name}-maintenance-token"
  sa_member    = "serviceAccount:${google_service_account.sluice.email}"
  wakeups      = var.pubsub_wakeups ? { SLUICE_WAKEUPS = module.wakeups[0].wakeups_url } : {}
}

resource "google_service_account" "sluice" {
  project      = var.project_id
  account_id   = var.name
  display_name = "sluice (${var.name})"
  description  = "Runs the sluice service: Cloud SQL client of one instance, reader of its own secrets."
}

module "database" {
  source = "../gcp-cloudsql-store"

  project_id             = var.project_id
  region                 = var.region
  name                   = var.name
  member                 = local.sa_member
  max_instances          = var.max_instances
  pool_max_conns         = var.pool_max_conns
  db_password            = var.db_password
  db_version             = var.db_version
  db_tier                = var.db_tier
  db_disk_size_gb        = var.db_disk_size_gb
  db_high_availability   = var.db_high_availability
  db_deletion_protection = var.db_deletion_protection
}

# Where these lived before the database part was shared: existing
# deployments keep their instance.
moved {
  from = google_sql_database_instance.this
  to   = module.database.google_sql_database_instance.this
}

moved {
  from = google_sql_database.sluice
  to   = module.database.google_sql_database.sluice
}

moved {
  from = google_sql_user.sluice
  to   = module.database.google_sql_user.sluice
}

moved {
  from = google_project_iam_member.cloudsql_client
  to   = module.database.google_project_iam_member.cloudsql_client[0]
}

module "secrets" {
  source = "../gcp-secrets"

  project_id = var.project_id
  accessor   = local.sa_member
  labels     = { app = "sluice", deployment = var.name }
  secrets = {
    (local.secret_store) = module.database.store_url
    (local.secret_keys)  = var.access_keys
    (local.secret_token) = var.maintenance_token
  }
}

module "wakeups" {
  source = "../gcp-pubsub-wakeups"
  count  = var.pubsub_wakeups ? 1 : 0

  project_id = var.project_id
  topic      = "${var.name}-wake"
  member     = local.sa_member
}

module "service" {
  source = "../gcp-cloudrun-service"

  project_id            = var.project_id
  region                = var.region
  name                  = var.name
  image                 = var.image
  service_account_email = google_service_account.sluice.email
  min_instances         = 0
  max_instances         = var.max_instances
  concurrency           = var.concurrency
  cloud_sql_instances   = [module.database.connection_name]

  env = merge(var.extra_env, local.wakeups, {
    SLUICE_REGION = var.sqs_region
  })
  secret_env = {
    SLUICE_STORE             = module.secrets.secrets[local.secret_store]
    SLUICE_ACCESS_KEYS       = module.secrets.secrets[local.secret_keys]
    SLUICE_MAINTENANCE_TOKEN = module.secrets.secrets[local.secret_token]
  }

  # A revision must not start before it may read its secrets and reach
  # the database and the topic.
  depends_on = [module.secrets, module.database, module.wakeups]
}

module "maintenance" {
  source = "../gcp-maintenance-schedule"

  project_id   = var.project_id
  region       = var.region
  name         = "${var.name}-maintain"
  endpoint_url = module.service.uri
  token        = var.maintenance_token
  schedule     = var.maintenance_schedule
}
