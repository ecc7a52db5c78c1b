# sluice as a Cloud Function (2nd gen) with Firestore: the same store,
# secrets and scheduler as cloudrun-firestore, with the function's front
# instead of the container. The buildpack builds the repository's root
# package (function.go), which registers the entry point Sluice.

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

# The uploaded source, named by its content so that a new zip makes a new
# build.
resource "google_storage_bucket" "source" {
  project                     = var.project_id
  name                        = "${var.project_id}-${var.name}-source"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true
}

resource "google_storage_bucket_object" "source" {
  bucket = google_storage_bucket.source.name
  name   = "sluice-source-${filemd5(var.source_zip)}.zip"
  source = var.source_zip
}

resource "google_cloudfunctions2_function" "this" {
  project     = var.project_id
  location    = var.region
  name        = var.name
  description = "sluice: the Amazon SQS API"

  build_config {
    runtime         = var.runtime
    entry_point     = "Sluice"
    service_account = var.build_service_account
    environment_variables = {
      GOOGLE_GO_VERSION = var.go_version
    }
    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    min_instance_count               = 0
    max_instance_count               = var.max_instances
    max_instance_request_concurrency = var.concurrency
    # Concurrency above 1 needs a whole CPU.
    available_cpu                  = "1"
    available_memory               = var.memory
    timeout_seconds                = 60
    ingress_settings               = "ALLOW_ALL"
    all_traffic_on_latest_revision = true
    service_account_email          = google_service_account.sluice.email

    # Queue URLs take X-Forwarded-Proto (SLUICE_TRUST_FORWARDED defaults
    # to true on a function).
    environment_variables = merge(var.extra_env, {
      SLUICE_STORE  = module.store.store_url
      SLUICE_REGION = var.sqs_region
    })

    secret_environment_variables {
      key        = "SLUICE_ACCESS_KEYS"
      project_id = var.project_id
      secret     = module.secrets.secrets[local.secret_keys].secret
      version    = module.secrets.secrets[local.secret_keys].version
    }
    secret_environment_variables {
      key        = "SLUICE_MAINTENANCE_TOKEN"
      project_id = var.project_id
      secret     = module.secrets.secrets[local.secret_token].secret
      version    = module.secrets.secrets[local.secret_token].version
    }
  }

  depends_on = [module.secrets, module.store]
}

# Public: SigV4 with the access keys keeps strangers out. A 2nd gen
# function is invoked through its Cloud Run service, of the same name.
resource "google_cloud_run_v2_service_iam_member" "public" {
  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.this.name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

locals {
  # The run.app URL: it has no path, so SDKs can take it as an endpoint
  # (the cloudfunctions.net URL ends in /NAME).
  endpoint = trimsuffix(google_cloudfunctions2_function.this.service_config[0].uri, "/")
}

module "maintenance" {
  source = "../gcp-maintenance-schedule"

  project_id   = var.project_id
  region       = var.region
  name         = "${var.name}-maintain"
  endpoint_url = local.endpoint
  token        = var.maintenance_token
  schedule     = var.maintenance_schedule
}
