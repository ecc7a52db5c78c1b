# Plan-mode checks of what matters in the deployment (the stand-in
# provider plans without a cloud; see infra/terraform).

variables {
  name        = "sluice-test"
  lambda_zip  = "tests/bootstrap.zip"
  access_keys = "AKIDEXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
  db_password = "correct-horse-battery-staple"
}

override_data {
  target = data.aws_region.current
  values = {
    region = "eu-west-1"
  }
}

override_data {
  target = data.aws_availability_zones.available
  values = {
    names = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
  }
}

override_resource {
  target = aws_lambda_function_url.this
  values = {
    function_url = "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/"
  }
}

override_resource {
  target = aws_lambda_function.this
  values = {
    arn = "arn:aws:lambda:eu-west-1:123456789012:function:sluice-test"
  }
}

override_resource {
  target = aws_kms_key.this
  values = {
    arn = "arn:aws:kms:eu-west-1:123456789012:key/00000000-0000-0000-0000-000000000000"
  }
}

override_resource {
  target = aws_security_group.function
  values = {
    id = "sg-function"
  }
}

override_resource {
  target = aws_security_group.database
  values = {
    id = "sg-database"
  }
}

override_resource {
  target = aws_rds_cluster.this
  values = {
    endpoint = "sluice-test.cluster-abc.eu-west-1.rds.amazonaws.com"
  }
}

run "function" {
  command = plan

  assert {
    condition     = aws_lambda_function.this.runtime == "provided.al2023" && aws_lambda_function.this.handler == "bootstrap" && aws_lambda_function.this.architectures == tolist(["arm64"])
    error_message = "The bootstrap of provided.al2023 on arm64."
  }
  assert {
    condition     = aws_lambda_function.this.timeout > 20
    error_message = "The timeout must fit a 20 s long poll."
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["SLUICE_STORE"] == "postgres://sluice:correct-horse-battery-staple@sluice-test.cluster-abc.eu-west-1.rds.amazonaws.com:5432/sluice?sslmode=require&pool_max_conns=4"
    error_message = "SLUICE_STORE is the cluster's URL, over TLS, with a bounded pool."
  }
  assert {
    condition     = aws_secretsmanager_secret_version.store.secret_string == aws_lambda_function.this.environment[0].variables["SLUICE_STORE"] && aws_secretsmanager_secret_version.access_keys.secret_string == var.access_keys
    error_message = "The store URL and the access keys are kept in Secrets Manager."
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["SLUICE_REGION"] == "eu-west-1"
    error_message = "SLUICE_REGION defaults to the deployment's region."
  }
  assert {
    condition     = aws_lambda_function.this.kms_key_arn == "arn:aws:kms:eu-west-1:123456789012:key/00000000-0000-0000-0000-000000000000"
    error_message = "The environment (which holds the secrets) is encrypted with the deployment's own key."
  }
}

run "url" {
  command = plan

  assert {
    condition     = output.sqs_endpoint_url == "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws"
    error_message = "sqs_endpoint_url is the function URL without its trailing slash."
  }
  assert {
    condition     = aws_lambda_function_url.this.authorization_type == "NONE" && aws_lambda_permission.public_url.action == "lambda:InvokeFunctionUrl" && aws_lambda_permission.public_url.function_url_auth_type == "NONE"
    error_message = "The URL is open; SigV4 with the access keys decides."
  }
}

run "database_scales_to_zero_in_the_vpc" {
  command = plan

  assert {
    condition     = aws_rds_cluster.this.serverlessv2_scaling_configuration[0].min_capacity == 0 && aws_rds_cluster.this.serverlessv2_scaling_configuration[0].seconds_until_auto_pause == 300
    error_message = "Aurora Serverless v2 pauses at 0 ACUs when idle."
  }
  assert {
    condition     = aws_rds_cluster_instance.writer.instance_class == "db.serverless" && aws_rds_cluster.this.storage_encrypted
    error_message = "A serverless, encrypted cluster."
  }
  assert {
    condition     = aws_vpc_security_group_ingress_rule.database_from_function.from_port == 5432 && aws_vpc_security_group_ingress_rule.database_from_function.referenced_security_group_id == "sg-function" && aws_vpc_security_group_egress_rule.function_to_database.referenced_security_group_id == "sg-database"
    error_message = "The database takes PostgreSQL from the function's security group, and the function reaches the database's group only."
  }
  assert {
    condition     = [for s in aws_subnet.private : s.availability_zone] == ["eu-west-1a", "eu-west-1b"]
    error_message = "Two subnets in two zones (a DB subnet group needs two)."
  }
}

run "least_privilege" {
  command = plan

  assert {
    condition     = aws_iam_role_policy_attachment.vpc_access.policy_arn == "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
    error_message = "The function's role holds only VPC network interfaces and logs."
  }
  assert {
    condition     = jsondecode(aws_iam_role.function.assume_role_policy).Statement[0].Principal.Service == "lambda.amazonaws.com"
    error_message = "Only Lambda assumes the function's role."
  }
  assert {
    condition     = jsondecode(aws_iam_role_policy.scheduler_invoke.policy).Statement == [{ Effect = "Allow", Action = "lambda:InvokeFunction", Resource = "arn:aws:lambda:eu-west-1:123456789012:function:sluice-test" }]
    error_message = "The scheduler may invoke this function and nothing else."
  }
}

run "maintenance" {
  command = plan

  assert {
    condition     = aws_scheduler_schedule.maintain.schedule_expression == "rate(15 minutes)" && aws_scheduler_schedule.maintain.flexible_time_window[0].mode == "OFF"
    error_message = "The pass runs every 15 minutes by default, so an idle cluster can pause between passes."
  }
  assert {
    condition     = jsondecode(aws_scheduler_schedule.maintain.target[0].input).source == "aws.events" && jsondecode(aws_scheduler_schedule.maintain.target[0].input)["detail-type"] == "Scheduled Event"
    error_message = "The scheduler sends the scheduled-event shape the function answers with a maintenance pass."
  }
}

run "bad_password_is_refused" {
  command = plan

  variables {
    db_password = "has/slash-and-long-enough"
  }

  expect_failures = [var.db_password]
}
