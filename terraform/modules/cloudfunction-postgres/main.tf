# sluice as a Cloud Function (2nd gen) with Cloud SQL for PostgreSQL: the
# same database (gcp-cloudsql-store), secrets, wake-ups and scheduler as
# cloudrun-postgres, with the function's front (gcp-cloudfunction-service)
# instead of the container.
#
# What the front changes: a function cannot mount Cloud SQL's socket (the
# function's service_config has no Cloud SQL setting, and its Cloud Run
# service belongs to Cloud Functions), so the instance has a private IP on
# a VPC network of the deployment's own, reached through a Serverless VPC
# Access connector for private ranges only; the password and TLS guard it.

locals {
  secret_store = "${var.name}-store"
  secret_keys  = "${var.name}-access-keys"
  secret_token = "${var.name}-maintenance-token"
  sa_member    = "serviceAccount:${google_service_account.sluice.email}"
  wakeups      = var.pubsub_wakeups ? { SLUICE_WAKEUPS = module.wakeups[0].wakeups_url } : {}
  # A connector's name is at most 25 characters.
  connector = "${substr(var.name, 0, 21)}-cx"
}

resource "google_service_account" "sluice" {
  project      = var.project_id
  account_id   = var.name
  display_name = "sluice (${var.name})"
  description  = "Runs the sluice function: database user over private IP, reader of its own secrets."
}

# The network the database's private IP is on, and Google's peering to it
# (private services access), which Cloud SQL's private IP needs.
resource "google_compute_network" "this" {
  project                 = var.project_id
  name                    = var.name
  auto_create_subnetworks = false
}

resource "google_compute_global_address" "private_services" {
  project       = var.project_id
  name          = "${var.name}-psa"
  network       = google_compute_network.this.id
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = 20
}

resource "google_service_networking_connection" "this" {
  network                 = google_compute_network.this.id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.private_services.name]
}

# The function's way into that network; billed while it exists (its
# instances do not scale to zero).
resource "google_vpc_access_connector" "this" {
  project       = var.project_id
  region        = var.region
  name          = local.connector
  network       = google_compute_network.this.name
  ip_cidr_range = var.connector_cidr
  machine_type  = "e2-micro"
  min_instances = 2
  max_instances = 3
}

module "database" {
  source = "../gcp-cloudsql-store"

  project_id             = var.project_id
  region                 = var.region
  name                   = var.name
  member                 = local.sa_member
  private_network        = google_compute_network.this.id
  max_instances          = var.max_instances
  pool_max_conns         = var.pool_max_conns
  db_password            = var.db_password
  db_version             = var.db_version
  db_tier                = var.db_tier
  db_disk_size_gb        = var.db_disk_size_gb
  db_high_availability   = var.db_high_availability
  db_deletion_protection = var.db_deletion_protection

  depends_on = [google_service_networking_connection.this]
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

module "function" {
  source = "../gcp-cloudfunction-service"

  project_id            = var.project_id
  region                = var.region
  name                  = var.name
  source_zip            = var.source_zip
  go_version            = var.go_version
  runtime               = var.runtime
  build_service_account = var.build_service_account
  service_account_email = google_service_account.sluice.email
  max_instances         = var.max_instances
  concurrency           = var.concurrency
  memory                = var.memory
  vpc_connector         = google_vpc_access_connector.this.id

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
  endpoint_url = module.function.uri
  token        = var.maintenance_token
  schedule     = var.maintenance_schedule
}
