# sluice on Cloud Run with Firestore (native mode). Nothing is billed at
# rest but storage: Cloud Run scales to zero and Firestore bills by
# operation. Wake-ups go through Firestore snapshot listeners (the store's
# default), so no other service is needed.

locals {
  secret_keys  = "${var.name}-access-keys"
  secret_token = "${var.name}-maintenance-token"
  sa_member    = "serviceAccount:${google_service_account.sluice.email}"
}

resource "google_service_account" "sluice" {
  project      = var.project_id
  account_id   = var.name
  display_name = "sluice (${var.name})"
  description  = "Runs the sluice service: document reader and writer of one Firestore database, reader of its own secrets."
}

module "store" {
  source = "../gcp-firestore-store"

  project_id          = var.project_id
  database            = var.database
  location            = var.database_location
  ttl                 = var.ttl
  deletion_protection = var.database_deletion_protection
  member              = local.sa_member
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

  env = merge(var.extra_env, {
    SLUICE_STORE  = module.store.store_url
    SLUICE_REGION = var.sqs_region
  })
  secret_env = {
    SLUICE_ACCESS_KEYS       = module.secrets.secrets[local.secret_keys]
    SLUICE_MAINTENANCE_TOKEN = module.secrets.secrets[local.secret_token]
  }

  # The store's queries fail until their indexes exist, and a revision
  # must not start before it may read its secrets and the database.
  depends_on = [module.secrets, module.store]
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
