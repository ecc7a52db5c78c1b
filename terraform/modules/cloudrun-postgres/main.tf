# sluice on Cloud Run with Cloud SQL for PostgreSQL.
#
# The service reaches the database through Cloud Run's built-in Cloud SQL
# connection (the Cloud SQL Auth Proxy's unix socket under /cloudsql), not
# private IP: no VPC, connector or Direct VPC egress to create or pay for
# while idle, the proxy encrypts and authorises by IAM (roles/cloudsql.client
# on this instance only), and the instance's public IP accepts no network
# (no authorised networks, connector enforcement on).

locals {
  secret_store  = "${var.name}-store"
  secret_keys   = "${var.name}-access-keys"
  secret_token  = "${var.name}-maintenance-token"
  database      = "sluice"
  db_user       = "sluice"
  sa_member     = "serviceAccount:${google_service_account.sluice.email}"
  wakeups       = var.pubsub_wakeups ? { SLUICE_WAKEUPS = module.wakeups[0].wakeups_url } : {}
  instance_path = "projects/${var.project_id}/instances/${google_sql_database_instance.this.name}"
  # Every instance's pool and LISTEN connection, plus room for Cloud SQL's
  # own and an operator's.
  max_connections = var.max_instances * (var.pool_max_conns + 1) + 20
  # pgx reads the socket directory from host=; the proxy encrypts, so the
  # socket itself needs no TLS.
  store_url = format("postgres://%s:%s@/%s?host=/cloudsql/%s&sslmode=disable&pool_max_conns=%d",
    local.db_user, urlencode(var.db_password), local.database,
  google_sql_database_instance.this.connection_name, var.pool_max_conns)
}

resource "google_service_account" "sluice" {
  project      = var.project_id
  account_id   = var.name
  display_name = "sluice (${var.name})"
  description  = "Runs the sluice service: Cloud SQL client of one instance, reader of its own secrets."
}

resource "google_sql_database_instance" "this" {
  project             = var.project_id
  region              = var.region
  name                = var.name
  database_version    = var.db_version
  deletion_protection = var.db_deletion_protection

  settings {
    tier                        = var.db_tier
    edition                     = "ENTERPRISE"
    availability_type           = var.db_high_availability ? "REGIONAL" : "ZONAL"
    disk_size                   = var.db_disk_size_gb
    disk_autoresize             = true
    deletion_protection_enabled = var.db_deletion_protection
    # Only the Cloud SQL connectors may connect.
    connector_enforcement = "REQUIRED"

    ip_configuration {
      ipv4_enabled = true
      ssl_mode     = "ENCRYPTED_ONLY"
    }

    backup_configuration {
      enabled                        = true
      point_in_time_recovery_enabled = true
    }

    database_flags {
      name  = "max_connections"
      value = tostring(local.max_connections)
    }
  }
}

resource "google_sql_database" "sluice" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = local.database
}

# A built-in user: a member of cloudsqlsuperuser, which owns the database
# Cloud SQL creates, so it may CREATE in schema public (which sluice needs
# on every start) and owns the tables it makes.
resource "google_sql_user" "sluice" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = local.db_user
  password = var.db_password
}

# Connect through the Cloud SQL connector, to this instance only.
resource "google_project_iam_member" "cloudsql_client" {
  project = var.project_id
  role    = "roles/cloudsql.client"
  member  = local.sa_member

  condition {
    title       = "only-${var.name}"
    description = "The sluice database instance only."
    expression  = "resource.name == \"${local.instance_path}\" && resource.type == \"sqladmin.googleapis.com/Instance\""
  }
}

module "secrets" {
  source = "../gcp-secrets"

  project_id = var.project_id
  accessor   = local.sa_member
  labels     = { app = "sluice", deployment = var.name }
  secrets = {
    (local.secret_store) = local.store_url
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
  cloud_sql_instances   = [google_sql_database_instance.this.connection_name]

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
  depends_on = [module.secrets, google_project_iam_member.cloudsql_client, module.wakeups, google_sql_user.sluice, google_sql_database.sluice]
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
