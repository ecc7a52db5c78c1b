# sluice as a Cloud Function (2nd gen): the buildpack builds the
# repository's root package (function.go), which registers the entry point
# Sluice, from a zip uploaded to a private bucket. Min instances 0; long
# polls share an instance; secrets come from Secret Manager.

# The source bucket is named after the project (globally unique) and the
# function. Bucket names end at 63 characters, which a 30-character project
# and a 49-character name pass: then the two are cut and a hash of them
# keeps the name theirs.
locals {
  bucket_full = "${var.project_id}-${var.name}-source"
  bucket_name = length(local.bucket_full) <= 63 ? local.bucket_full : "${trimsuffix(substr("${var.project_id}-${var.name}", 0, 46), "-")}-${substr(sha256("${var.project_id}/${var.name}"), 0, 8)}-source"
}

# The uploaded source, named by its content so that a new zip makes a new
# build.
resource "google_storage_bucket" "source" {
  project                     = var.project_id
  name                        = local.bucket_name
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
    service_account_email          = var.service_account_email
    # Only private ranges (a database's private IP) go through the
    # connector; the Google APIs stay on the default path.
    vpc_connector                 = var.vpc_connector
    vpc_connector_egress_settings = var.vpc_connector == null ? null : "PRIVATE_RANGES_ONLY"

    # Queue URLs take X-Forwarded-Proto (SLUICE_TRUST_FORWARDED defaults
    # to true on a function). GODEBUG keeps the Go runtime's sysmon out of
    # its deep sleep, as sluice serve does by itself (internal/sysmon; a
    # function's main is the framework's); env can set it otherwise.
    environment_variables = merge({ GODEBUG = "schedtrace=2147483647" }, var.env)

    dynamic "secret_environment_variables" {
      for_each = var.secret_env
      content {
        key        = secret_environment_variables.key
        project_id = var.project_id
        secret     = secret_environment_variables.value.secret
        version    = secret_environment_variables.value.version
      }
    }
  }
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
