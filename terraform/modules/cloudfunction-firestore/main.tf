# sluice as a Cloud Function (2nd gen) with Firestore: the same store,
# secrets and scheduler as cloudrun-firestore, with the function's front
# (gcp-cloudfunction-service) instead of the container.

locals {
  secret_keys  = "${var.name}-access-keys"
  secret_token = "${var.name}-maintenance-token"
  sa_member    = "serviceAccount:${google_service_account.sluice.email}"
}

resource "google_service_account" "sluice" {
  project      = var.project_id
  account_id   = var.name
  display_name = "sluice (${var.name})"
  description  = "Runs the sluice function: document reader and writer of one Firestore database, reader of its own secrets."
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

  env = merge(var.extra_env, {
    SLUICE_STORE  = module.store.store_url
    SLUICE_REGION = var.sqs_region
  })
  secret_env = {
    SLUICE_ACCESS_KEYS       = module.secrets.secrets[local.secret_keys]
    SLUICE_MAINTENANCE_TOKEN = module.secrets.secrets[local.secret_token]
  }

  depends_on = [module.secrets, module.store]
}

# Where these lived before the function front was shared: existing
# deployments keep their function and bucket.
moved {
  from = google_storage_bucket.source
  to   = module.function.google_storage_bucket.source
}

moved {
  from = google_storage_bucket_object.source
  to   = module.function.google_storage_bucket_object.source
}

moved {
  from = google_cloudfunctions2_function.this
  to   = module.function.google_cloudfunctions2_function.this
}

moved {
  from = google_cloud_run_v2_service_iam_member.public
  to   = module.function.google_cloud_run_v2_service_iam_member.public
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
