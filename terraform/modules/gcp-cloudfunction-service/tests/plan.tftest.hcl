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

run "source_bucket_keeps_its_name_when_it_fits" {
  command = plan

  assert {
    condition     = google_storage_bucket.source.name == "sluice-test-sluice-fn-source"
    error_message = "A bucket name within 63 characters is project-name-source, as deployments before have it."
  }
}

run "source_bucket_name_of_a_long_project_and_name" {
  command = plan

  variables {
    project_id = "a-project-of-thirty-characters"
    name       = "a-function-name-of-forty-nine-characters-x-sluice"
  }

  # project-name-source would be 87 characters.
  assert {
    condition     = google_storage_bucket.source.name == "a-project-of-thirty-characters-a-function-name-aee72c9e-source" && length(google_storage_bucket.source.name) <= 63
    error_message = "A name past 63 characters is cut, with a hash of project and name before -source."
  }
}

run "source_bucket_names_differ_for_long_names_alike_at_the_start" {
  command = plan

  variables {
    project_id = "a-project-of-thirty-characters"
    name       = "a-function-name-of-forty-nine-characters-x-other"
  }

  assert {
    condition     = google_storage_bucket.source.name == "a-project-of-thirty-characters-a-function-name-92ff1a18-source"
    error_message = "Two functions whose names differ only past the cut get two buckets."
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
