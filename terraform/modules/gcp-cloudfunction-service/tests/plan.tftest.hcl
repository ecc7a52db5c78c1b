variables {
  project_id            = "sluice-test"
  region                = "europe-west1"
  name                  = "sluice-fn"
  source_zip            = "tests/source.zip"
  service_account_email = "sluice-fn@sluice-test.iam.gserviceaccount.com"
  env                   = { SLUICE_STORE = "mem://" }
  secret_env = {
    SLUICE_ACCESS_KEYS = { secret = "sluice-fn-access-keys", version = "1" }
  }
}

override_resource {
  target = google_cloudfunctions2_function.this
  values = {
    url = "https://europe-west1-sluice-test.cloudfunctions.net/sluice-fn"
    service_config = {
      uri = "https://sluice-fn-abcdefghij-ew.a.run.app/"
    }
  }
}

run "function" {
  command = plan

  assert {
    condition     = output.config.min_instances == 0
    error_message = "The function must scale to zero (min instances 0)."
  }
  assert {
    condition     = output.config.entry_point == "Sluice" && output.config.go_version == "1.26.8"
    error_message = "The buildpack builds the entry point Sluice with the Go version go.mod needs."
  }
  assert {
    condition     = output.config.concurrency > 1 && output.config.cpu == "1"
    error_message = "Long polls share an instance: concurrency above 1, which needs a whole CPU."
  }
  assert {
    condition     = output.config.secret_env == { SLUICE_ACCESS_KEYS = "sluice-fn-access-keys" } && output.config.plain_env == tomap({ SLUICE_STORE = "mem://", GODEBUG = "schedtrace=2147483647" })
    error_message = "Plain settings are plain variables, secrets come from Secret Manager."
  }
  assert {
    condition     = output.config.service_account == var.service_account_email && output.config.vpc_connector == null
    error_message = "The function runs as the given account, without a VPC connector unless asked."
  }
}

run "url_and_access" {
  command = plan

  assert {
    condition     = output.uri == "https://sluice-fn-abcdefghij-ew.a.run.app"
    error_message = "uri is the run.app URL (no path, no trailing slash), not the cloudfunctions.net one."
  }
  assert {
    condition     = google_cloud_run_v2_service_iam_member.public.role == "roles/run.invoker" && google_cloud_run_v2_service_iam_member.public.member == "allUsers"
    error_message = "The function is public; SigV4 decides."
  }
}

run "source_is_private" {
  command = plan

  assert {
    condition     = google_storage_bucket.source.public_access_prevention == "enforced" && google_storage_bucket.source.uniform_bucket_level_access
    error_message = "The source bucket is not public."
  }
  assert {
    condition     = google_storage_bucket_object.source.name == "sluice-source-${filemd5("tests/source.zip")}.zip"
    error_message = "The object is named by the zip's content, so a new zip makes a new build."
  }
}

run "vpc_connector_for_private_ranges_only" {
  command = plan

  variables {
    vpc_connector = "projects/sluice-test/locations/europe-west1/connectors/sluice-fn"
  }

  assert {
    condition     = google_cloudfunctions2_function.this.service_config[0].vpc_connector == var.vpc_connector && google_cloudfunctions2_function.this.service_config[0].vpc_connector_egress_settings == "PRIVATE_RANGES_ONLY"
    error_message = "Through a connector go private ranges only."
  }
}

run "a_secret_in_env_is_refused" {
  command = plan

  variables {
    env = { SLUICE_MAINTENANCE_TOKEN = "0123456789abcdef0123456789abcdef" }
  }

  expect_failures = [var.env]
}
