# sluice on Cloud Run with Cloud Spanner. The instance is billed by its
# compute capacity while it exists (it does not scale to zero); Cloud Run
# does. The database is created empty: the store applies its own versioned
# DDL (stores/spanner/migrations.go) when an instance starts, so the
# schema is the code's and never drifts from a copy here. Wake-ups go
# through Pub/Sub, the store's default (Spanner has no notifications).

locals {
  secret_keys  = "${var.name}-access-keys"
  secret_token = "${var.name}-maintenance-token"
  sa_member    = "serviceAccount:${google_service_account.sluice.email}"
  store_url    = "spanner://projects/${var.project_id}/instances/${google_spanner_instance.this.name}/databases/${google_spanner_database.this.name}"
  # The topic the store would name by default (sluice-wake-INSTANCE-DATABASE),
  # made here so that instances never create topics.
  topic = "sluice-wake-${var.name}-${var.database}"
}

resource "google_service_account" "sluice" {
  project      = var.project_id
  account_id   = var.name
  display_name = "sluice (${var.name})"
  description  = "Runs the sluice service: user and schema migrator of one Spanner database, reader of its own secrets."
}

resource "google_spanner_instance" "this" {
  project          = var.project_id
  name             = var.name
  config           = coalesce(var.instance_config, "regional-${var.region}")
  display_name     = "sluice ${var.name}"
  processing_units = var.processing_units
  force_destroy    = false
  labels           = { app = "sluice", deployment = var.name }
}

resource "google_spanner_database" "this" {
  project          = var.project_id
  instance         = google_spanner_instance.this.name
  name             = var.database
  database_dialect = "GOOGLE_STANDARD_SQL"
  # Both Terraform's guard and Spanner's own drop protection.
  deletion_protection    = var.database_deletion_protection
  enable_drop_protection = var.database_deletion_protection
}

# Reads, writes and transactions on this database only.
resource "google_spanner_database_iam_member" "user" {
  project  = var.project_id
  instance = google_spanner_instance.this.name
  database = google_spanner_database.this.name
  role     = "roles/spanner.databaseUser"
  member   = local.sa_member
}

# The migrations at start: UpdateDatabaseDdl (spanner.databases.updateDdl,
# which roles/spanner.databaseUser lacks) and waiting for its operation.
# A custom role, granted on this database only, instead of
# roles/spanner.databaseAdmin, which could also drop the database, restore
# backups over it and change its IAM policy.
resource "google_project_iam_custom_role" "ddl" {
  project     = var.project_id
  role_id     = substr("sluiceSpannerDdl_${replace(var.name, "-", "_")}", 0, 64)
  title       = "sluice schema migrations (${var.name})"
  description = "Apply sluice's DDL migrations to its Spanner database and wait for them."
  permissions = [
    "spanner.databaseOperations.get",
    "spanner.databases.updateDdl",
  ]
}

resource "google_spanner_database_iam_member" "ddl" {
  project  = var.project_id
  instance = google_spanner_instance.this.name
  database = google_spanner_database.this.name
  role     = google_project_iam_custom_role.ddl.name
  member   = local.sa_member
}

module "secrets" {
  source = "../gcp-secrets"

  project_id = var.project_id
  accessor   = local.sa_member
  labels     = { app = "sluice", deployment = var.name }
  secrets = {
    (local.secret_keys)  = var.access_keys
    (local.secret_token) = var.maintenance_token
  }
}

module "wakeups" {
  source = "../gcp-pubsub-wakeups"

  project_id = var.project_id
  topic      = local.topic
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

  # SLUICE_WAKEUPS names the topic made here, though it is the store's
  # default: what the service uses is then visible in its configuration.
  env = merge(var.extra_env, {
    SLUICE_STORE   = local.store_url
    SLUICE_WAKEUPS = module.wakeups.wakeups_url
    SLUICE_REGION  = var.sqs_region
  })
  secret_env = {
    SLUICE_ACCESS_KEYS       = module.secrets.secrets[local.secret_keys]
    SLUICE_MAINTENANCE_TOKEN = module.secrets.secrets[local.secret_token]
  }

  # A revision must not start before it may read its secrets, migrate and
  # use the database and reach the topic.
  depends_on = [module.secrets, module.wakeups, google_spanner_database_iam_member.user, google_spanner_database_iam_member.ddl]
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
